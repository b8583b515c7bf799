"""What the simulated client asks for: datasets one after another, and how it reports progress.

Dataset sizes follow the run: several datasets in a row, B2_opencodeinstruct first in the demo.
Prompt and response lengths are lognormal.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO


@dataclass(frozen=True, slots=True)
class Dataset:
    name: str
    count: int
    prompt_mean: int
    response_mean: int
    max_new_tokens: int = 16384
    system_prompt_tokens: int = 180
    prompt_sigma: float = 0.5  # of the lognormal lengths: the spread around the mean
    response_sigma: float = 0.6


# B2's lengths are fitted to the run's table, not to "B2 averages ~4K tokens" (BENCHMARKS.md, "The demo's
# numbers"): 159K tokens at 0.96 usage and 72 running is ~2.1K held a request, and 116K with 35-50 running
# at least ~2.2K; 1,600-token prompts with 1,150-token responses hold ~2.25K on average. Most of that is
# prompt, held from admission on, so a run settles within its first minute (the demo's default config runs
# two). Narrow spreads keep the fp8 run's usage (0.88-0.91 at 150 running) off the 0.95 alert.
DATASETS: tuple[Dataset, ...] = (
    Dataset("B1", 1200, 420, 1500),
    Dataset("B2_opencodeinstruct", 3500, 1600, 1150, prompt_sigma=0.1, response_sigma=0.3),
    Dataset("B6", 2500, 900, 2000),
    Dataset("B7", 2000, 650, 2200),
)


def lognormal(rng: random.Random, mean: float, sigma: float = 0.6, low: int = 16, high: int = 1 << 20) -> int:
    mu = math.log(mean) - sigma * sigma / 2
    return max(low, min(int(rng.lognormvariate(mu, sigma)), high))


def sample_lengths(rng: random.Random, ds: Dataset) -> tuple[int, int]:
    """(prompt tokens, response tokens) of one request of `ds`."""
    prompt = lognormal(rng, ds.prompt_mean, ds.prompt_sigma, low=ds.system_prompt_tokens + 8)
    response = lognormal(rng, ds.response_mean, ds.response_sigma, high=ds.max_new_tokens)
    return prompt, response


def fmt_interval(seconds: float) -> str:
    """tqdm's `MM:SS` / `H:MM:SS`."""
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours:d}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def tqdm_line(desc: str, n: int, total: int, elapsed: float, width: int = 10) -> str:
    """A tqdm progress line (`B2:  45%|████▌     | 1604/3500 [12:49<15:10,  2.08it/s]`)."""
    frac = n / total if total else 1.0
    filled = frac * width
    full = int(filled)
    bar = "█" * full
    if full < width:
        bar += " ▏▎▍▌▋▊▉"[int((filled - full) * 8)]
    bar = bar.ljust(width)
    rate = n / elapsed if elapsed > 0 else 0.0
    remaining = fmt_interval((total - n) / rate) if rate > 0 else "?"
    rate_text = f"{rate:5.2f}it/s" if rate >= 1 or rate == 0 else f"{1 / rate:5.2f}s/it"
    return f"{desc}: {frac * 100:3.0f}%|{bar}| {n}/{total} [{fmt_interval(elapsed)}<{remaining}, {rate_text}]"


class OutputSink:
    """Appends one JSON line per response to `prepared/<dataset>/raw_responses.jsonl`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._files: dict[str, TextIO] = {}

    def append(self, dataset: str, record: dict[str, object]) -> None:
        handle = self._files.get(dataset)
        if handle is None:
            path = self.root / "prepared" / dataset / "raw_responses.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            handle = self._files[dataset] = path.open("a", encoding="utf-8")
        handle.write(json.dumps(record) + "\n")
        handle.flush()

    def close(self) -> None:
        for handle in self._files.values():
            handle.close()
        self._files.clear()


def response_text(rng: random.Random, tokens: int) -> str:
    """A short stand-in for the response (the real ones are ~16 KB; the demo must not fill the disk)."""
    words = ("def", "return", "self", "value", "for", "in", "range", "if", "else", "print", "list", "data")
    return " ".join(rng.choice(words) for _ in range(min(tokens, 48)))
