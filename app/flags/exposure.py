"""Flags the controller does not change unless the host's config allows them by name.

The restart endpoint exists to tune a server (memory fraction, cache, batch sizes, parallelism). A few
flags do something else entirely with the same token: load code or weights from a path or repo
(`model-path`, `trust-remote-code`, `custom-weight-loader`, `forward-hooks`, templates, LoRA paths),
change where and how the server listens (`host`, `port`, gRPC, SSL, root path, sidecars), or send
or write data elsewhere (URLs, endpoints, dump folders, request logging). They are recognised by
name, from SGLang 0.5.23's list (app/flags/sglang-0.5.23.json): an explicit set, plus every flag
whose name ends in a path/file/dir/url/endpoint/port/config word or starts with ssl-/grpc-/otlp-.
The launch line's own values are not changes, so a server started with `--model-path X` restarts
fine as long as the request leaves `model-path` alone.
"""

from __future__ import annotations

import re

GUARDED_FLAGS = frozenset({
    # code, weights and what they are interpreted with
    "model-path", "tokenizer-path", "trust-remote-code", "enable-custom-logit-processor",
    "custom-weight-loader", "forward-hooks", "json-model-override-args", "model-loader-extra-config",
    "load-format", "revision", "model-impl", "speculative-draft-model-revision",
    "enable-lora", "chat-template", "completion-template", "hf-chat-template-name", "trust-request-chat-template",
    "tool-server", "sidecar", "sidecar-args", "skip-tokenizer-init", "is-embedding", "enable-multimodal",
    "delete-ckpt-after-loading", "hicache-storage-backend", "mm-global-cache-backend", "kv-canary-real-data",
    # where and how it listens, and what it lets through
    "host", "grpc-mode", "smg-grpc-mode", "allowed-media-domains", "enable-response-store",
    "disaggregation-mode", "disaggregation-transfer-backend",
    # what leaves the server: prompts in logs, traces, hidden states
    "log-requests", "log-requests-level", "log-requests-format", "log-requests-target", "enable-trace",
    "trace-modules", "enable-return-hidden-states", "enable-return-aux-hidden-states",
    "enable-return-routed-experts", "export-metrics-to-file",
})
# A value naming a file, directory, URL, socket or port; `*-config` flags take a path or a JSON that can.
_GUARDED_SUFFIX = re.compile(
    r".*(^|-)(path|paths|dir|folder|file|url|urls|endpoint|endpoints|socket|port|ports|addr|ip|ib-device|config)"
)
_GUARDED_PREFIX = re.compile(r"(ssl|grpc|otlp|remote-instance-weight-loader|debug-tensor-dump|decoupled-spec)-.*")


def is_guarded(flag: str) -> bool:
    """True for a flag (canonical name, no `--`) that changes more than how the server performs."""
    return flag in GUARDED_FLAGS or bool(_GUARDED_SUFFIX.fullmatch(flag) or _GUARDED_PREFIX.fullmatch(flag))
