"""The scheduler model: a waiting queue, KV-limited admission, decode steps, retraction.

It follows SGLang's scheduler in the ways that show in the logs: a request is admitted only if the
free KV tokens cover its prompt plus a reservation for future output (`new_token_ratio` times the
remaining max_new_tokens, clipped), the ratio decays step by step from 0.7 to 0.1 so admission gets
bolder after a start (the warm-up burst), and when a decode step would not fit the pool the
requests with the least output are retracted to the front of the queue and the ratio jumps up.
Decode step time is `a + b * batch`, so throughput grows with concurrency and saturates near 1/b.
Time is simulated: `advance_to(t)` runs steps until the engine's clock reaches t.

Calibration (FITTED to the run's table, B2 workload, 150 requests kept in flight from a cold start,
second half of each story run (120 s, 300 s, 480 s), 10 seeds; `tests/simulator/test_engine.py` checks
the ranges):

    config               tokens   running      usage        queue       gen tok/s
    0.85 default         115,980  49-52 (35-50) 0.97        98-101      720-760 (600-850)
    0.88 + hicache 48    158,983  67-70 (72)   0.97 (0.96)  80-83 (79)  905-935 (930)
    0.90 + fp8 + hicache 375,304  150 (150)    0.88-0.92 (0.62) 0 (0)   1375-1395 (1300-1450)

(measured in parentheses; where the run's figures conflict, BENCHMARKS.md says which are followed).
Constants: step 0.047 s + 0.00036 s per running request; the ratio's floor 0.015 and its rise per
retraction capped at 0.01 (SGLang: floor 0.1 x conservativeness, uncapped), without which usage sags
after each retraction instead of holding near the top.
"""

from __future__ import annotations

import math
import random
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from kvwatch.simulator import logfmt
from kvwatch.simulator.logwriter import LogWriter

CLIP_MAX_NEW_TOKENS = 4096  # SGLang clips the reservation per request to this many tokens
RETRACT_DECODE_STEPS = 20  # after a retraction every request must have room for this many steps


@dataclass(slots=True)
class Request:
    rid: str
    prompt_tokens: int
    output_tokens: int  # where the model stops (EOS); capped by max_new_tokens
    max_new_tokens: int
    prefix_key: str = ""  # requests with the same key share a cached system prompt
    prefix_tokens: int = 0
    on_done: Callable[[Request], None] | None = None
    generated: int = 0
    cached_tokens: int = 0
    arrival_t: float = 0.0
    first_token_t: float | None = None
    finished_t: float | None = None
    retractions: int = 0
    original_prompt: int = 0

    def __post_init__(self) -> None:
        self.original_prompt = self.original_prompt or self.prompt_tokens

    @property
    def total_generated(self) -> int:
        """Output tokens so far, including those folded into the prompt by a retraction."""
        return self.generated + self.prompt_tokens - self.original_prompt

    def held(self) -> int:
        return self.prompt_tokens + self.generated

    def remaining(self) -> int:
        return min(self.output_tokens, self.max_new_tokens) - self.generated

    def reservation(self) -> int:
        """What SGLang reserves for future output: it cannot know the EOS, only max_new_tokens."""
        return min(self.max_new_tokens - self.generated, CLIP_MAX_NEW_TOKENS)


@dataclass(slots=True)
class EngineConfig:
    max_total_num_tokens: int
    max_running_requests: int = 2048
    max_prefill_tokens: int = 16384
    decode_log_interval: int = 40
    step_base_s: float = 0.047  # fitted: ~50 reqs -> ~740, 70 -> ~920, 150 -> ~1385 tok/s
    step_per_req_s: float = 0.00036
    prefill_tokens_per_s: float = 30000.0
    cuda_graph_max_bs: int = 256
    init_new_token_ratio: float = 0.7
    # fitted (SGLang: 0.1 x conservativeness) so saturated runs sit at usage 0.96-0.98 as measured
    min_new_token_ratio: float = 0.015
    new_token_ratio_decay_steps: int = 600
    retract_ratio_rise: float = 0.01
    step_jitter: float = 0.08
    dp_rank: int | None = None
    seed: int = 0


@dataclass(slots=True)
class EngineStats:
    prompt_tokens_total: int = 0
    generation_tokens_total: int = 0
    cached_tokens_total: int = 0
    num_requests_total: int = 0
    num_retracted_total: int = 0
    last_gen_throughput: float = 0.0
    last_input_throughput: float = 0.0


@dataclass(slots=True)
class _LogWindow:
    t: float = 0.0
    tokens: int = 0


class Engine:
    def __init__(self, config: EngineConfig, log: LogWriter) -> None:
        self.cfg = config
        self.log = log
        self.rng = random.Random(config.seed)
        self.t = 0.0
        self.waiting: deque[Request] = deque()
        self.running: list[Request] = []
        self.used = 0
        self.ratio = config.init_new_token_ratio
        self.decode_ct = 0
        self.stats = EngineStats()
        self._inbox: deque[Request] = deque()
        self._lock = threading.Lock()
        self._seen_prefixes: set[str] = set()
        self._decode_window = _LogWindow()
        self._prefill_window = _LogWindow()

    # -- inputs -------------------------------------------------------------------------------
    def submit(self, req: Request) -> None:
        """Thread-safe: the request joins the queue at the engine's next step."""
        with self._lock:
            self._inbox.append(req)

    def _drain_inbox(self) -> None:
        with self._lock:
            while self._inbox:
                req = self._inbox.popleft()
                req.arrival_t = self.t
                self.waiting.append(req)

    # -- observed state -----------------------------------------------------------------------
    @property
    def token_usage(self) -> float:
        return self.used / max(self.cfg.max_total_num_tokens, 1)

    def pending_tokens(self) -> int:
        return sum(r.prompt_tokens for r in self.waiting)

    # -- the loop -----------------------------------------------------------------------------
    def advance_to(self, t_target: float) -> None:
        while self.t < t_target:
            self._drain_inbox()
            if not self.running and not self.waiting:
                self.t = t_target
                return
            self.step()

    def step(self) -> None:
        self._prefill()
        if self.running:
            self._decode()

    def _reserved(self) -> float:
        return sum(r.reservation() for r in self.running) * self.ratio

    def _prefill(self) -> None:
        if not self.waiting:
            return
        free = self.cfg.max_total_num_tokens - self.used - self._reserved()
        batch: list[Request] = []
        new_tokens = 0
        while self.waiting and len(self.running) + len(batch) < self.cfg.max_running_requests:
            req = self.waiting[0]
            need = req.prompt_tokens + req.reservation() * self.ratio
            if need > free or (batch and new_tokens + req.prompt_tokens > self.cfg.max_prefill_tokens):
                break
            self.waiting.popleft()
            free -= need
            batch.append(req)
            req.cached_tokens = self._cache_hit(req)
            new_tokens += req.prompt_tokens - req.cached_tokens
        if batch:
            self._run_prefill(batch, new_tokens)

    def _cache_hit(self, req: Request) -> int:
        if req.retractions:
            return 0
        if req.prefix_key in self._seen_prefixes:
            return min(req.prefix_tokens, req.prompt_tokens)
        self._seen_prefixes.add(req.prefix_key)
        return 0

    def _run_prefill(self, batch: list[Request], new_tokens: int) -> None:
        self.t += 0.01 + new_tokens / self.cfg.prefill_tokens_per_s
        cached = sum(r.cached_tokens for r in batch)
        for req in batch:
            self.used += req.prompt_tokens
            req.first_token_t = req.first_token_t or self.t
            self.running.append(req)
        self.stats.prompt_tokens_total += new_tokens + cached
        self.stats.cached_tokens_total += cached
        gap = max(self.t - self._prefill_window.t, 1e-3)
        self.stats.last_input_throughput = new_tokens / gap
        self._prefill_window = _LogWindow(self.t, 0)
        hit = self.stats.cached_tokens_total / max(self.stats.prompt_tokens_total, 1)
        self.log.rank(self.t, logfmt.prefill_line(
            self.log.fmt, len(batch), new_tokens, cached, self.token_usage, len(self.running),
            len(self.waiting), hit, self.pending_tokens(), self.stats.last_input_throughput,
        ), dp_rank=self.cfg.dp_rank)

    def _decode(self) -> None:
        if self.used + len(self.running) > self.cfg.max_total_num_tokens:
            self._retract()
        n = len(self.running)
        jitter = 1.0 + self.rng.uniform(-self.cfg.step_jitter, self.cfg.step_jitter)
        self.t += (self.cfg.step_base_s + self.cfg.step_per_req_s * n) * jitter
        self.used += n
        self.stats.generation_tokens_total += n
        self._decode_window.tokens += n
        for req in self.running:
            req.generated += 1
        self._finish_done()
        floor = self.cfg.min_new_token_ratio
        step = (self.cfg.init_new_token_ratio - floor) / self.cfg.new_token_ratio_decay_steps
        self.ratio = max(self.ratio - step, floor)
        self.decode_ct += 1
        if self.decode_ct % self.cfg.decode_log_interval == 0:
            self._log_decode(n)

    def _finish_done(self) -> None:
        still: list[Request] = []
        for req in self.running:
            if req.remaining() > 0:
                still.append(req)
                continue
            self.used -= req.held()
            req.finished_t = self.t
            self.stats.num_requests_total += 1
            if req.on_done is not None:
                req.on_done(req)
        self.running = still

    def _log_decode(self, batch_size: int) -> None:
        gap = max(self.t - self._decode_window.t, 1e-3)
        self.stats.last_gen_throughput = self._decode_window.tokens / gap
        self._decode_window = _LogWindow(self.t, 0)
        self.log.rank(self.t, logfmt.decode_line(
            self.log.fmt, len(self.running), self.used, self.token_usage, self.stats.last_gen_throughput,
            len(self.waiting), batch_size <= self.cfg.cuda_graph_max_bs,
        ), dp_rank=self.cfg.dp_rank)

    def _retract(self) -> None:
        """Free room for RETRACT_DECODE_STEPS more steps by sending the youngest requests back."""
        order = sorted(self.running, key=lambda r: (r.generated, -r.prompt_tokens))
        retracted: list[Request] = []
        while order and len(order) > 1:
            room = self.cfg.max_total_num_tokens - self.used
            if room >= len(order) * RETRACT_DECODE_STEPS:
                break
            victim = order.pop(0)
            self.used -= victim.held()
            victim.prompt_tokens += victim.generated  # re-prefilled with its output so far
            victim.max_new_tokens -= victim.generated
            victim.output_tokens -= victim.generated
            victim.generated = 0
            victim.retractions += 1
            retracted.append(victim)
        if not retracted:
            return
        self.running = [r for r in self.running if r not in retracted]
        self.waiting.extendleft(reversed(retracted))
        self.stats.num_retracted_total += len(retracted)
        old = self.ratio
        decoded = sum(r.generated for r in self.running) + RETRACT_DECODE_STEPS * len(self.running)
        total_max = sum(r.max_new_tokens for r in self.running) or 1
        # SGLang's estimate, its rise capped (fitted): uncapped, admission stalls long enough after each
        # retraction for usage to sag below the 0.96 the run sustained
        self.ratio = min(1.0, max(min(decoded / total_max, old + self.cfg.retract_ratio_rise), old))
        gained = sum(r.prompt_tokens for r in retracted)
        message = logfmt.retract_line(self.log.fmt, len(retracted), gained, old, self.ratio)
        self.log.all_ranks(self.t, message, dp_rank=self.cfg.dp_rank)


def response_tokens(rng: random.Random, mean: float, max_new: int) -> int:
    """Lognormal response length with the given mean (sigma 0.6), at least 16 tokens."""
    sigma = 0.6
    mu = math.log(mean) - sigma * sigma / 2
    return max(16, min(int(rng.lognormvariate(mu, sigma)), max_new))


