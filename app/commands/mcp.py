"""`kvwatch mcp`: an MCP server (stdio) for a coding agent, over a running kvwatch's HTTP API.

kvwatch mcp [--url URL] [--config FILE]

The URL as `kvwatch status` finds it. With a control token ($KVWATCH_TOKEN, or the config's
[server] token) the `restart` tool is offered too, and its requests carry the token; without one it
is absent. A remote agent uses the streamable HTTP endpoint `kvwatch serve` mounts at /mcp instead.
Needs the `mcp` extra: pip install 'kvwatch[mcp]'.
"""

from __future__ import annotations

import argparse
import logging
import os

from kvwatch.app.commands.status import add_connection_arguments
from kvwatch.app.config import default_config_path, load_config
from kvwatch.app.errors import ConfigError
from kvwatch.app.terminal.client import resolve_url

NAME = "mcp"
HELP = "serve kvwatch's tools to a coding agent over MCP (stdio; needs the kvwatch[mcp] extra)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_arguments(parser)


def control_token(args: argparse.Namespace) -> str | None:
    """KVWATCH_TOKEN, else the [server] token of --config or the discovered kvwatch.toml."""
    if os.environ.get("KVWATCH_TOKEN"):
        return os.environ["KVWATCH_TOKEN"]
    found = args.config or default_config_path()
    return None if found is None else load_config(found).server.token


def run(args: argparse.Namespace) -> int:
    try:
        from kvwatch.app.mcp.server import build_server
    except ImportError as exc:
        raise ConfigError(f"`kvwatch mcp` needs the mcp extra: pip install 'kvwatch[mcp]' ({exc})") from None
    from kvwatch.app.mcp.api import Api

    token = control_token(args)
    logging.getLogger("httpx2").setLevel(logging.WARNING)  # a line per API request would drown the agent's log
    api = Api(resolve_url(args.url, os.environ, args.config),
              {"Authorization": f"Bearer {token}"} if token else {})
    build_server(lambda _ctx: api, control=token is not None).run("stdio")
    return 0
