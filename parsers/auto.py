"""`auto`: sniff what a stream is from its first lines, then hand every line to that parser.

Lines are held (at most SNIFF_LINES) until one of them is decisive; then the chosen parser gets
them all, in order, and `chosen` names it. No decisive line by then, or a flush while lines are held:
SGLang, the format kvwatch is mostly pointed at. A flush before any line decides nothing.
`health` is the chosen parser's once it is chosen.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import ClassVar

from kvwatch.parsers.base import LineParser, ParseHealth, Record

SNIFF_LINES = 1000
_VLLM_HEADER = re.compile(r"(?:\(\w[\w.-]* pid=\d+[^)]*\) )?(?:INFO|WARNING|ERROR|DEBUG) \d{2}-\d{2} \d{2}:")
_GPU_ROW = re.compile(r"\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?, \d+, ")
_METRIC = re.compile(r"(?:sglang|vllm)[:_]\w+[{ ]")
_SGLANG_MARKS = ("Decode batch", "Prefill batch", "server_args=", "max_total_num_tokens=", "sglang")
_VLLM_MARKS = ("Avg prompt throughput", "vLLM", "vllm", "(APIServer pid=", "(EngineCore")


def sniff(text: str) -> str | None:
    """The source a single line gives away, or None."""
    if any(mark in text for mark in _SGLANG_MARKS):
        return "sglang"
    if any(mark in text for mark in _VLLM_MARKS) or _VLLM_HEADER.match(text):
        return "vllm"
    if text.startswith(("# HELP ", "# TYPE ")) or _METRIC.match(text):
        return "prometheus"
    if "utilization.gpu" in text or _GPU_ROW.match(text):
        return "nvidia-smi"
    if "%|" in text:
        return "client"
    if text.startswith("{") and text.rstrip().endswith("}"):
        return "outputs"
    return None


class AutoParser:
    name: ClassVar[str] = "auto"

    def __init__(self, factory: Callable[[str], LineParser]) -> None:
        self.health = ParseHealth()
        self.chosen: str | None = None
        self._factory = factory
        self.delegate: LineParser | None = None
        self._held: list[tuple[int, str]] = []

    def feed(self, line_no: int, text: str) -> list[Record]:
        if self.delegate is not None:
            return self.delegate.feed(line_no, text)
        self._held.append((line_no, text))
        self.health.lines += 1
        try:
            source = sniff(text)
        except Exception:  # never raise: sniffing is a guess, not a requirement
            source = None
        if source is None and len(self._held) < SNIFF_LINES:
            return []
        return self._choose(source or "sglang")

    def flush(self) -> list[Record]:
        if self.delegate is None:
            if not self._held:
                return []  # an idle flush before any line must not decide the format
            records = self._choose("sglang")
            assert self.delegate is not None
            return records + self.delegate.flush()
        return self.delegate.flush()

    def _choose(self, source: str) -> list[Record]:
        self.chosen = source
        self.delegate = delegate = self._factory(source)
        self.health = delegate.health
        held, self._held = self._held, []
        return [record for line_no, text in held for record in delegate.feed(line_no, text)]
