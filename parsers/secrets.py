"""Secrets a server logs about itself, recognised by name and replaced before anything keeps them.

SGLang logs `server_args=ServerArgs(..., api_key='...', admin_api_key='...')` and vLLM
`Namespace(..., api_key='...', hf_token='...')` at every start. Those values open the LLM server to
whoever reads them, so no record, stored row, API answer or report may carry them. A name is secret
when one of its words says so (`password`, `secret`, `credential(s)`), when it is an API key
(`api_key`, `admin_api_key`, `openai_api_key`), or when it is a token that grants access (`hf_token`,
`auth_token`, `access_token`, `bearer_token`, a bare `token` string); `max_total_tokens`,
`tokenizer_path` or `ssl_keyfile` (a path) are not secrets.
"""

from __future__ import annotations

import re
from typing import Any

REDACTED = "<redacted>"

_SECRET_WORDS = frozenset({"password", "passwd", "secret", "credential", "credentials", "apikey"})
_TOKEN_OWNERS = frozenset({"hf", "auth", "access", "bearer", "api", "admin", "refresh", "id", "session"})
_WORD_SPLIT = re.compile(r"[^a-z0-9]+")


def is_secret_name(name: str) -> bool:
    """True for a flag or field name whose value is a credential (`api_key`, `--hf-token`, `ssl_keyfile_password`)."""
    words = [word for word in _WORD_SPLIT.split(name.lower()) if word]
    if not words:
        return False
    if any(word in _SECRET_WORDS for word in words):
        return True
    if len(words) >= 2 and words[-2:] == ["api", "key"]:
        return True
    if words[-1] == "token":
        return len(words) == 1 or words[-2] in _TOKEN_OWNERS
    return False


def redact(value: Any) -> Any:
    """A copy of `value` with every secret-named entry of every nested dict replaced by REDACTED.

    Only text and containers are secrets; a number under a secret-looking name (a `token` count) stays.
    An entry that holds nothing (None, "") stays as it is: "no key set" is a fact worth seeing.
    """
    if isinstance(value, dict):
        return {key: _redacted_entry(str(key), item) for key, item in value.items()}
    if isinstance(value, list):
        return [redact(item) for item in value]
    if isinstance(value, str):
        return redact_text(value)
    return value


def redact_mapping(value: dict[str, Any]) -> dict[str, Any]:
    """`redact` of a dict, typed as one."""
    return {key: _redacted_entry(key, item) for key, item in value.items()}


def _redacted_entry(key: str, item: Any) -> Any:
    if is_secret_name(key) and isinstance(item, str | list | dict) and item not in ("", [], {}):
        return REDACTED
    return redact(item)


# `--api-key VALUE` / `--api-key=VALUE` on a command line; `api_key='VALUE'`, `"hf_token": "VALUE"` in a dump.
_FLAG_SECRET = re.compile(
    r"""(?<![\w-])(?P<name>--?[A-Za-z][\w-]*)(?P<sep>=|\s+)(?P<quote>['"]?)(?P<value>[^\s'"]+)(?P=quote)"""
)
_FIELD_SECRET = re.compile(
    r"""(?<![\w#-])(?P<name>[A-Za-z_]\w*)(?P<sep>['"]?\s*[=:]\s*)(?P<quote>['"]?)(?P<value>[^\s,;'")}\]]+)(?P=quote)"""
)


def redact_text(text: str) -> str:
    """Secret values written inline (`--api-key sk-1`, `api_key='sk-1'`, `"hf_token": "x"`) replaced.

    For free text that quotes a command line or an args dump (an error message, a launch command).
    A bare `token` is not a secret here: SGLang's own `#token: 153179` is a count.
    """
    def replace(match: re.Match[str]) -> str:
        name = match.group("name").lstrip("-")
        if name.lower() == "token" or not is_secret_name(name) or match.group("value") in ("None", "null"):
            return match.group(0)
        quote = match.group("quote")
        return f"{match.group('name')}{match.group('sep')}{quote}{REDACTED}{quote}"

    return _FIELD_SECRET.sub(replace, _FLAG_SECRET.sub(replace, text))
