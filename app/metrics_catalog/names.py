"""Catalogued series that code outside the catalog names on purpose (to seed, derive or read them),
so the name is written once: entries.py declares them under these names. Add one here when a module
needs a series by name rather than by its entry or chart."""

from __future__ import annotations

COMPLETIONS = "completions"  # an output file's line count, sampled when it moves
COMPLETION_RATE = "completion_rate"  # derived from COMPLETIONS at read time (/api/series)
GEN_THROUGHPUT = "gen_throughput"  # the fleet's summed tok/s and sparkline
TOKEN_USAGE = "token_usage"  # the fleet's usage sparkline
RUNNING_REQ = "running_req"
QUEUE_REQ = "queue_req"
