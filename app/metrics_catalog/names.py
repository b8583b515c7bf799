"""Catalogued series that code outside the catalog names on purpose (to seed, derive or read them, or to
key a field that holds a metric's value), so the name is written once: entries.py declares them under
these names. Add one here when a module needs a series by name rather than by its entry or chart.

`Final`, so mypy reads each as its own literal type: a field typed by one of the Literal aliases below
takes the constant."""

from __future__ import annotations

from typing import Final, Literal

COMPLETIONS: Final = "completions"  # an output file's line count, sampled when it moves
COMPLETION_RATE: Final = "completion_rate"  # derived from COMPLETIONS at read time (/api/series)
GEN_THROUGHPUT: Final = "gen_throughput"  # the fleet's summed tok/s and sparkline
INPUT_THROUGHPUT: Final = "input_throughput"  # prefill's tok/s
TOKEN_USAGE: Final = "token_usage"  # the fleet's usage sparkline
FULL_TOKEN_USAGE: Final = "full_token_usage"  # a sliding-window model's full-attention pool
SWA_TOKEN_USAGE: Final = "swa_token_usage"  # and its sliding-window pool
TOKEN: Final = "token"  # KV tokens in use (the metric, not the API token)
RUNNING_REQ: Final = "running_req"
QUEUE_REQ: Final = "queue_req"
NEW_SEQ: Final = "new_seq"  # requests a prefill batch admitted
NEW_TOKEN: Final = "new_token"  # prompt tokens a prefill batch computed
CACHED_TOKEN: Final = "cached_token"  # prompt tokens a prefill batch found in the prefix cache
CLIENT_DONE: Final = "client_done"  # the client log's progress
CLIENT_TOTAL: Final = "client_total"
GPU_UTIL_PCT: Final = "gpu_util_pct"
GPU_MEM_USED_MIB: Final = "gpu_mem_used_mib"
GPU_MEM_TOTAL_MIB: Final = "gpu_mem_total_mib"

# Some of the names as types, for a field that may hold only them (mypy builds no Literal from a
# constant); tests/meta/test_metric_vocabulary.py checks each against its constants.
Objective = Literal["gen_throughput", "completion_rate"]  # the rates a campaign may maximise
Completions = Literal["completions"]  # `kvwatch wait --until completions>=N` waits on this series


def by_constant() -> dict[str, str]:
    """Every name above under its constant's: /api/catalog's `names`, so the page's code (static/names.js)
    reads a metric's name from the server as app/ reads it from here."""
    return {key: value for key, value in globals().items() if key.isupper() and isinstance(value, str)}
