"""Parsers: pure functions from log lines to records. Registry of stream parsers by source name."""

from __future__ import annotations

from parsers.base import LineParser, ParseHealth, Record
from parsers.sglang import SglangParser

PARSERS: dict[str, type[LineParser]] = {cls.name: cls for cls in (SglangParser,)}


def create_parser(source: str) -> LineParser:
    """A fresh parser for one stream of `source` (a key of PARSERS)."""
    return PARSERS[source]()


__all__ = ["PARSERS", "LineParser", "ParseHealth", "Record", "create_parser"]
