"""Extract SGLang's flag schema from its own argument parser.

    python -m kvwatch.app.flags.extract --python /path/to/venv/bin/python      # writes app/flags/sglang-<v>.json

A venv that can import sglang.srt.server_args without a GPU (Python 3.11, ~90 s, 2.3 GB):

    python3 -m venv V && V/bin/pip install --no-deps sglang==0.5.23 && V/bin/pip install torch==2.13.0 \
        numpy orjson psutil pybase64 requests triton packaging pillow starlette pydantic pyzmq tqdm \
        ipython aiohttp msgspec

(`pip install kvwatch[sglang]` pulls sglang with all its CUDA dependencies instead.) The test that
regenerates the committed file runs when KVWATCH_SGLANG_PYTHON=V/bin/python.

The extraction program below is plain stdlib Python that runs in the interpreter that has sglang
(never in kvwatch's): locally through `LocalTransport`, on a GPU host through the SSH transport,
always as `env PYTHONHASHSEED=0 <python> -c PROGRAM <mode>` with argv quoted by the transport. `version` mode reads
importlib.metadata only (cheap: no torch import); `schema` mode imports sglang.srt.server_args,
which imports torch (about 4 s on CPU).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from kvwatch.collectors.base import CollectorError, CommandResult
from kvwatch.collectors.local import LocalTransport


class Runner(Protocol):
    """What extraction needs of a host: a name for messages and `Transport.run`."""

    name: str

    def run(self, argv: list[str], timeout: float = 30.0, stdin: bytes = b"") -> CommandResult: ...


PROGRAM = r"""
import argparse, json, sys
from importlib.metadata import version, PackageNotFoundError
try:
    v = version("sglang")
except PackageNotFoundError:
    print(json.dumps({"error": "sglang is not installed for " + sys.executable}))
    sys.exit(3)
if sys.argv[1] == "version":
    print(json.dumps({"sglang": v}))
    sys.exit(0)
from sglang.srt.server_args import ServerArgs

def plain(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return repr(value)

def kind(action):
    names = {"_StoreAction": "store", "_StoreTrueAction": "store_true", "_StoreFalseAction": "store_false",
             "_StoreConstAction": "store_const", "_AppendAction": "append", "_CountAction": "count",
             "BooleanOptionalAction": "boolean_optional"}
    return names.get(type(action).__name__, "other:" + type(action).__name__)

parser = argparse.ArgumentParser()
ServerArgs.add_cli_args(parser)
options = []
for action in parser._actions:
    if isinstance(action, argparse._HelpAction) or not action.option_strings:
        continue
    options.append({
        "option_strings": list(action.option_strings),
        "dest": action.dest,
        "default": plain(action.default),
        "choices": plain(list(action.choices)) if action.choices is not None else None,
        "type": None if action.type is None else getattr(action.type, "__name__", repr(action.type)),
        "nargs": action.nargs,
        "action": kind(action),
        "help": (action.help or "").strip().splitlines()[0] if action.help else "",
    })
print(json.dumps({"sglang": v, "options": options}))
"""

FLAGS_DIR = Path(__file__).resolve().parent


class ExtractError(CollectorError):
    """The target Python could not describe its sglang (not installed, import failed)."""


def run_program(transport: Runner, python: str, mode: str, timeout: float) -> dict[str, Any]:
    """Run the extraction program in `python` on `transport`; its one JSON line, parsed."""
    # SGLang builds some choices lists from sets (--sampling-backend): a fixed hash seed keeps their order.
    result = transport.run(["env", "PYTHONHASHSEED=0", python, "-c", PROGRAM, mode], timeout=timeout)
    try:
        answer = json.loads(result.stdout.decode("utf-8", "replace").strip().splitlines()[-1])
    except (IndexError, ValueError):
        answer = None
    if result.exit_status != 0 or not isinstance(answer, dict) or "error" in answer:
        reason = answer.get("error") if isinstance(answer, dict) else None
        tail = result.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        raise ExtractError(f"{transport.name}: {python}: {reason or tail[0]}")
    return answer


def sglang_version(transport: Runner, python: str = "python3") -> str:
    """The sglang version installed for `python` on that host (importlib.metadata; imports no torch)."""
    return str(run_program(transport, python, "version", timeout=30.0)["sglang"])


def extract_schema(transport: Runner, python: str = "python3") -> dict[str, Any]:
    """Every option of that host's `ServerArgs.add_cli_args`, as the JSON document we commit."""
    return run_program(transport, python, "schema", timeout=180.0)


def schema_path(version: str) -> Path:
    return FLAGS_DIR / f"sglang-{version}.json"


def dump(document: dict[str, Any]) -> str:
    """Stable text for the committed file: one option per line keeps diffs between versions readable."""
    lines = [f'{{"sglang": {json.dumps(document["sglang"])}, "options": [']
    options = document["options"]
    for index, option in enumerate(options):
        comma = "," if index < len(options) - 1 else ""
        lines.append("  " + json.dumps(option, sort_keys=True, ensure_ascii=False) + comma)
    lines.append("]}")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kvwatch.app.flags.extract", description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="interpreter that has sglang installed")
    parser.add_argument("-o", "--output", type=Path, help="default: app/flags/sglang-<version>.json")
    args = parser.parse_args(argv)
    try:
        document = extract_schema(LocalTransport(), args.python)
    except CollectorError as exc:
        print(f"extract: error: {exc}", file=sys.stderr)
        return 2
    output = args.output or schema_path(document["sglang"])
    output.write_text(dump(document), encoding="utf-8")
    print(f"{output}: {len(document['options'])} options of sglang {document['sglang']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
