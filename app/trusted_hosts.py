"""Which `Host` header values kvwatch answers: the defence against DNS rebinding.

A page on an attacker's domain that re-resolves to 127.0.0.1 talks to kvwatch as a "same-origin"
site, but its requests still carry the attacker's name in `Host`. Only these names are answered
(Starlette's TrustedHostMiddleware, ports ignored); any other gets 400:
- loopback: `127.0.0.1`, `localhost`, `[::1]`;
- the bind address itself, unless it is a wildcard (0.0.0.0, ::);
- `server.allowed_hosts` and `KVWATCH_ALLOWED_HOSTS` (comma-separated), e.g. the name a reverse proxy
  or Prometheus uses; `*.example.com` matches the subdomains of example.com;
- `testserver`, the name Starlette's in-process TestClient sends. It is a single-label name that no
  public DNS answers, so a rebinding page on the Internet cannot get a browser to send it.
"""

from __future__ import annotations

import ipaddress
import os
import re

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
IN_PROCESS_NAME = "testserver"
ENV_VAR = "KVWATCH_ALLOWED_HOSTS"
_LABEL = r"[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?"
_NAME = re.compile(rf"(\*\.)?{_LABEL}(\.{_LABEL})*\.?")


def host_pattern(name: str) -> str:
    """`name` as the middleware compares it (lower case, IPv6 in brackets); ValueError if it is not a host name."""
    text = name.strip().lower()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        address = None
    if address is not None:
        return f"[{address}]" if address.version == 6 else str(address)
    if not _NAME.fullmatch(text):
        raise ValueError(f"{name!r} is not a host name (no port, no scheme; `*.example.com` for subdomains)")
    return text.rstrip(".")


def bind_name(bind: str) -> str | None:
    """The Host a client uses for the bind address; None for a wildcard address, which is no name."""
    try:
        address = ipaddress.ip_address(bind.strip("[]"))
    except ValueError:
        return host_pattern(bind) if _NAME.fullmatch(bind.lower()) else None
    return None if address.is_unspecified else host_pattern(str(address))


def env_names() -> tuple[str, ...]:
    """KVWATCH_ALLOWED_HOSTS: for containers, where the config file is the user's and the name is compose's."""
    raw = os.environ.get(ENV_VAR, "")
    return tuple(host_pattern(name) for name in raw.split(",") if name.strip())


def allowed_hosts(configured: tuple[str, ...], bind: str) -> list[str]:
    """Every Host name answered when serving on `bind`, in a stable order without repeats."""
    names = [*LOOPBACK_NAMES, IN_PROCESS_NAME, bind_name(bind), *configured, *env_names()]
    return list(dict.fromkeys(name for name in names if name))
