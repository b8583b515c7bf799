"""Lines a server writes on behalf of its users: request and response logging.

SGLang with `--log-requests` logs `Receive: obj=GenerateReqInput(text='...', ...)`,
`Receive OpenAI: obj=...` and `Finish: obj=..., out={'text': '...', ...}`; vLLM (by default before
0.10, with `--enable-log-requests` after) logs `Received request chatcmpl-...: prompt: '...', params: ...`,
`Request chatcmpl-... details: prompt: '...'` and, with `--enable-log-outputs`,
`Generated response chatcmpl-...: output: '...'`. Their text is whoever called the API: a prompt that
holds `Decode batch, ... token usage: 0.99` or `CUDA out of memory` says nothing about the server, so
such a line is recognised by where the engine's message starts and never read for a signal.
"""

from __future__ import annotations

import re

_STARTS = (
    "Receive: ", "Receive OpenAI: ", "Finish: ",  # SGLang's RequestLogger
    "Received request ", "Generated response ",  # vLLM's RequestLogger
)
_VLLM_DETAILS = re.compile(r"Request \S{1,200} details: ")
# A logger's own bracketed name in front (`[TokenizerManager] Receive: ...`).
_OWNER = re.compile(r"\[[A-Za-z_][\w.]{0,80}\] ")


def is_request_log(message: str) -> bool:
    """True when the engine's message is a logged request or response (its text is the API's caller's)."""
    message = message.lstrip()
    owner = _OWNER.match(message)
    if owner is not None:
        message = message[owner.end() :]
    return message.startswith(_STARTS) or _VLLM_DETAILS.match(message) is not None


def before_quotes(message: str) -> str:
    """The part of a message before its first quote: what follows a quote is quoted text (an input, a
    path, a value) that the engine repeats, so an event phrase is read only in front of it."""
    cut = len(message)
    for quote in ("'", '"'):
        index = message.find(quote)
        if index != -1:
            cut = min(cut, index)
    return message[:cut]
