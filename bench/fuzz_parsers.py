"""Coverage-guided fuzzing of every parser with atheris (libFuzzer), outside CI.

    python bench/fuzz_parsers.py [--runs 200000] [--source sglang] [--wrappers] [-- libFuzzer flags]

Input bytes are split into lines (invalid UTF-8 replaced, as the tail does) and fed to one parser
(the first byte picks it unless --source is given) through its own logic, without feed()'s safety net.
Any exception is a crash that libFuzzer reports with the input that caused it; the golden cases in
tests/parsers/cases are the seed corpus. It needs `pip install atheris` (not in any extra: CI fuzzes
with hypothesis, tests/hardening/test_parser_fuzz.py).

`--wrappers`: the input is a wrapper put in front of (and a tail behind) a real SGLang or vLLM line
(parsers/prefixes.py); besides not raising, no record may hold a field whose name is not of a field
name's shape (tests/parsers/test_wrappers.py's `is_field_name`): whatever wraps a line, no series
is invented. A violation is reported like a crash.
"""

from __future__ import annotations

import argparse
import atexit
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import atheris

with atheris.instrument_imports():
    from kvwatch.parsers import PARSERS, create_parser

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(PARSERS)


def feed(source: str, data: bytes) -> None:
    parser: Any = create_parser(source, file="out.jsonl") if source == "outputs" else create_parser(source)
    inner = getattr(parser, "_feed", parser.feed)
    records: list[Any] = []
    for line_no, line in enumerate(data.decode("utf-8", "replace").split("\n"), 1):
        records += inner(line_no, line)
    records += parser.flush()
    json.dumps(records, allow_nan=False)


ENGINE_LINES = (
    ("sglang", "[2026-04-08 14:05:21 TP0] Decode batch, #running-req: 5, #token: 20800, token usage: 0.29, "
               "cuda graph: True, gen throughput (token/s): 144.95, #queue-req: 0"),
    ("vllm", "INFO 05-19 10:13:11 [loggers.py:271] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation "
             "throughput: 1055.3 tokens/s, Running: 18 reqs, Waiting: 43 reqs, GPU KV cache usage: 95.9%, "
             "Prefix cache hit rate: 0.0%"),
    ("sglang", "max_total_num_tokens=2086558, chunked_prefill_size=8192, max_prefill_tokens=16384"),
)
RESERVED = {"kind", "line", "ts", "tz", "tags", "engine", "engines"}


def wrapped(data: bytes) -> None:
    """`data` split at its first NUL into a wrapper and a tail around one engine line."""
    if not data:
        return
    source, line = ENGINE_LINES[data[0] % len(ENGINE_LINES)]
    wrapper, _, tail = data[1:].decode("utf-8", "replace").partition("\x00")
    parser: Any = create_parser(source)
    for record in parser.feed(1, wrapper + line + tail) + parser.flush():
        for key in record.keys() - RESERVED:
            words = key.split("_")
            if not (key.isascii() and key[:1].isalpha() and key == key.lower()
                    and all(word.isalnum() and not word.isdigit() for word in words)):
                raise AssertionError(f"field {key!r} from {wrapper!r} + line + {tail!r}")


def seed_corpus() -> str:
    folder = Path(tempfile.mkdtemp(prefix="kvwatch-fuzz-"))
    atexit.register(shutil.rmtree, folder, True)  # libFuzzer adds what it finds here
    for n, case in enumerate(sorted((ROOT / "tests" / "parsers" / "cases").glob("*/*/input.log"))):
        lines = case.read_bytes().splitlines(keepends=True)
        for start in range(0, len(lines), 8):  # small seeds: libFuzzer caps input length
            (folder / f"{n}-{start}").write_bytes(b"".join(lines[start:start + 8]))
    return str(folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=200_000)
    parser.add_argument("--source", choices=SOURCES)
    parser.add_argument("--wrappers", action="store_true", help="fuzz what wraps a real engine line")
    args, rest = parser.parse_known_args()

    def one_input(data: bytes) -> None:
        if args.wrappers:
            wrapped(data)
        elif args.source:
            feed(args.source, data)
        elif data:
            feed(SOURCES[data[0] % len(SOURCES)], data[1:])

    atheris.Setup([sys.argv[0], f"-runs={args.runs}", *rest, seed_corpus()], one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
