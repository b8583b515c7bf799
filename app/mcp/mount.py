"""Whether the app serves MCP at /mcp: only when the `mcp` extra is installed (no SDK import otherwise)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, nullcontext

from fastapi import FastAPI


def mount_if_installed(app: FastAPI, control: bool) -> Callable[[], AbstractAsyncContextManager[None]]:
    """A factory of the /mcp route's running context (one per lifespan), or of contexts that do nothing
    without the SDK."""
    if importlib.util.find_spec("mcp") is None:
        return nullcontext
    from kvwatch.app.mcp.http import mount

    return mount(app, control)
