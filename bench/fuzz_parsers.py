"""Coverage-guided fuzzing of every parser with atheris (libFuzzer), outside CI.

    python bench/fuzz_parsers.py [--runs 200000] [--source sglang] [-- libFuzzer flags]

Input bytes are split into lines (invalid UTF-8 replaced, as the tail does) and fed to one parser
(the first byte picks it unless --source is given) through its own logic, without feed()'s safety net.
Any exception is a crash that libFuzzer reports with the input that caused it; the golden cases in
tests/parsers/cases are the seed corpus. It needs `pip install atheris` (not in any extra: CI fuzzes
with hypothesis, tests/hardening/test_parser_fuzz.py).
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
    args, rest = parser.parse_known_args()

    def one_input(data: bytes) -> None:
        if args.source:
            feed(args.source, data)
        elif data:
            feed(SOURCES[data[0] % len(SOURCES)], data[1:])

    atheris.Setup([sys.argv[0], f"-runs={args.runs}", *rest, seed_corpus()], one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
