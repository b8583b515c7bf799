"""`kvwatch parse`: run the parsers over log files offline and write their records.

Streaming, so memory stays flat in file size: files are read in 1 MiB blocks, records go out in
batches. JSONL is written as it comes. CSV and Parquet need one column set for the whole file, and
records may gain columns late (an unknown key, a second file), so batches are spooled to Arrow IPC
parts in a temp dir, and the output is written from them at the end under the union of their
columns. A column whose type differs between batches becomes float (int and float) or else text;
dict and list fields (`tags`, `args`, `labels`) are JSON text in CSV and Parquet. With several
FILEs every record gets a `file` field.
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import IO, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from kvwatch.app.errors import KvwatchError
from kvwatch.app.lean_pyarrow import pyarrow_without_pandas
from kvwatch.app.progress import Progress
from kvwatch.parsers import SOURCES, LineParser, Record, create_parser
from kvwatch.parsers.auto import AutoParser
from kvwatch.parsers.columnar import ColumnarSglang
from kvwatch.parsers.sglang import SglangParser
from kvwatch.parsers.tables import conform, csv_ready, records_table, unified_schema

NAME = "parse"
HELP = "Parse server, client, GPU or /metrics logs offline into records (JSONL, CSV or Parquet)."
FORMATS = ("jsonl", "csv", "parquet")
BLOCK_BYTES = 4 << 20


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--source", choices=SOURCES, default="auto", help="log format (default: auto)")
    parser.add_argument("--format", choices=FORMATS, default="jsonl", help="output format (default: jsonl)")
    parser.add_argument("-o", "--output", type=Path, help="output file (default: stdout; needed for parquet)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no per-file summary on stderr")
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE")


def run(args: argparse.Namespace) -> int:
    for path in args.files:
        if not path.is_file():
            problem = "not a regular file" if path.exists() else "no such file"
            raise KvwatchError(f"{path}: {problem}")
    if args.format == "parquet" and args.output is None:
        raise KvwatchError("--format parquet writes a binary file: give it -o OUT")
    pyarrow_without_pandas()
    try:
        _write(args)
    except BrokenPipeError:  # `kvwatch parse ... | head`: the reader left, nothing is wrong
        sys.stderr.close()
    except OSError as exc:
        raise KvwatchError(f"{exc.filename or args.output}: {exc.strerror or exc}") from exc
    return 0


def read_blocks(path: Path, progress: Progress | None = None) -> Iterator[tuple[str, bool]]:
    """(text, ended): runs of whole lines joined by newlines, then a last line that has no newline yet.

    Invalid UTF-8 is replaced, never raised.
    """
    for block, ended in read_raw_blocks(path, progress):
        yield block.decode("utf-8", "replace"), ended


def read_raw_blocks(path: Path, progress: Progress | None = None) -> Iterator[tuple[bytes, bool]]:
    """`read_blocks` before decoding."""
    pending: list[bytes] = []
    with path.open("rb") as handle:
        while block := handle.read(BLOCK_BYTES):
            if progress is not None:
                progress.advance(len(block))
            cut = block.rfind(b"\n")
            if cut < 0:
                pending.append(block)  # a long line: join once it ends, not on every block
                continue
            pending.append(block[:cut])
            yield b"".join(pending), True
            pending = [block[cut + 1 :]]
    tail = b"".join(pending)
    if tail:
        yield tail, False


def block_lines(block: bytes) -> pa.Array:
    """The lines of a block as an Arrow string array; invalid UTF-8 replaced as `read_blocks` does."""
    whole = _one_string(block)
    try:
        whole.validate(full=True)  # UTF-8 checked in C++: the decode below is for the rare bad block
    except pa.ArrowInvalid:
        whole = _one_string(block.decode("utf-8", "replace").encode())
    return pc.split_pattern(whole, "\n").flatten()


def _one_string(data: bytes) -> pa.Array:
    # Over the bytes, no copy; pa.array() would also import pandas (0.2 s) to ask if it is a Series.
    offsets = pa.py_buffer(struct.pack("<ii", 0, len(data)))
    return pa.Array.from_buffers(pa.string(), 1, [None, offsets, pa.py_buffer(data)])


def read_lines(path: Path) -> Iterator[tuple[str, bool]]:
    """(line, ended) for each line of `path`, without its newline (or a CRLF's `\\r`)."""
    for text, ended in read_blocks(path):
        for line in text.split("\n"):
            yield (line[:-1] if line.endswith("\r") else line), ended


Chunk = tuple[list[pa.Table], list[Record]]


def parse_file(
    path: Path, source: str, label: str | None, fast: bool = False, quiet: bool = True,
    progress: Progress | None = None,
) -> Iterator[Chunk]:
    """Chunks of records of one file. `fast`: SGLang logs take the columnar path (tables)."""
    parser: LineParser = create_parser(source, file=str(path))
    line_no = 0
    for block, ended in read_raw_blocks(path, progress):
        if not ended and "outputs" in (source, getattr(parser, "chosen", None)):
            break
        if fast:
            lines = block_lines(block)
            records, fed = _until_chosen(parser, line_no, lines)
            line_no += fed
            columnar = _columnar(parser)
            if columnar is not None:
                rest = lines.slice(fed)
                tables, more = columnar.block(line_no + 1, rest)
                line_no += len(rest)
                yield _labelled(tables, records + more, label)
                continue
            texts = lines.slice(fed).to_pylist()
        else:
            records, texts = [], block.decode("utf-8", "replace").split("\n")
        for line in texts:
            line_no += 1
            records += parser.feed(line_no, _strip_cr(line))
        yield _labelled([], records, label)
    yield _labelled([], parser.flush(), label)
    if not quiet:
        if progress is not None:
            progress.clear()
        _summary(path, parser, line_no)


def _strip_cr(line: str) -> str:
    return line[:-1] if line.endswith("\r") else line


def _until_chosen(parser: LineParser, line_no: int, lines: pa.Array) -> tuple[list[Record], int]:
    """Feed an auto parser that has not chosen yet line by line until it does: (records, lines fed)."""
    records: list[Record] = []
    fed = 0
    while isinstance(parser, AutoParser) and parser.chosen is None and fed < len(lines):
        fed += 1
        records += parser.feed(line_no + fed, _strip_cr(lines[fed - 1].as_py()))
    return records, fed


def _columnar(parser: LineParser) -> ColumnarSglang | None:
    if isinstance(parser, AutoParser):
        parser = parser.delegate  # type: ignore[assignment]  # None until it has chosen
    return ColumnarSglang(parser) if isinstance(parser, SglangParser) else None


def _labelled(tables: list[pa.Table], records: list[Record], label: str | None) -> Chunk:
    if label is not None:
        for record in records:
            record.setdefault("file", label)
        tables = [table.append_column("file", pa.repeat(label, len(table))) for table in tables]
    return tables, records


def _summary(path: Path, parser: LineParser, lines: int) -> None:
    source = getattr(parser, "chosen", None) or parser.name
    health = parser.health
    counts = ", ".join(f"{value} {key}" for key, value in health.as_dict().items())
    print(f"kvwatch parse: {path} ({source}, {lines} lines): {counts}", file=sys.stderr)
    if health.sample is not None:
        print(f"kvwatch parse: {path}: first unparsed, line {health.sample_line}: {health.sample}", file=sys.stderr)


def _chunks(args: argparse.Namespace) -> Iterator[Chunk]:
    several = len(args.files) > 1
    fast = args.format != "jsonl"
    total = sum(path.stat().st_size for path in args.files)
    with Progress("parse", total, "B") as progress:
        # Records printed to a terminal would be torn by the progress line: no progress then.
        progress.enabled = progress.enabled and (args.output is not None or not sys.stdout.isatty())
        for path in args.files:
            label = str(path) if several else None
            yield from parse_file(path, args.source, label, fast, args.quiet, progress)


def _write(args: argparse.Namespace) -> None:
    with ExitStack() as stack:
        if args.format == "jsonl":
            out = sys.stdout if args.output is None else stack.enter_context(args.output.open("w"))
            write_jsonl(_chunks(args), out)
            return
        spool = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kvwatch-parse-")))
        parts = spool_parts(_chunks(args), spool)
        target: Any = args.output if args.output is not None else sys.stdout.buffer
        write_table(parts, args.format, target)


def write_jsonl(chunks: Iterator[Chunk], out: IO[str]) -> None:
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": ")).encode
    for _, records in chunks:
        if records:
            out.write("\n".join(map(dumps, records)) + "\n")
    out.flush()


def spool_parts(chunks: Iterator[Chunk], spool: Path) -> list[Path]:
    """Write each chunk as one Arrow IPC file, rows in line order; their paths."""
    parts: list[Path] = []
    for tables, records in chunks:
        pieces = [*tables, records_table(records)] if records else tables
        if not pieces:
            continue
        table = pa.concat_tables(pieces, promote_options="permissive") if len(pieces) > 1 else pieces[0]
        table = table.sort_by("line") if len(pieces) > 1 else table
        part = spool / f"part-{len(parts):06d}.arrow"
        with pa.OSFile(str(part), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        parts.append(part)
    return parts


def write_table(parts: list[Path], fmt: str, target: Any) -> None:
    """Write the spooled parts as one CSV or Parquet file, one part in memory at a time."""
    schemas = [pa.ipc.open_file(pa.memory_map(str(part))).schema for part in parts]
    schema = unified_schema(schemas) if schemas else pa.schema([("kind", pa.string()), ("line", pa.int64())])
    if fmt == "csv":
        schema = csv_ready(schema.empty_table()).schema
    writer: Any = (
        pq.ParquetWriter(target, schema, use_dictionary=["kind", "file"])  # ts and values: no gain
        if fmt == "parquet"
        else pa_csv.CSVWriter(target, schema)
    )
    with writer:
        for part in parts:
            with pa.memory_map(str(part)) as source:
                table = pa.ipc.open_file(source).read_all()
                table = csv_ready(table) if fmt == "csv" else table
                writer.write_table(conform(table, schema))
