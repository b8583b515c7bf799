"""The MCP server: the reading tools always, `restart` only for a server given a control token."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

from kvwatch.app.mcp.tools import (
    Backend,
    register_campaign_control,
    register_campaign_status,
    register_deciding,
    register_resources,
    register_restart,
    register_watching,
)

INSTRUCTIONS = (
    "kvwatch watches SGLang/vLLM servers and their clients. Start with `hosts`; read a host with `status`; "
    "block with `wait` (never sleep); ask `diagnose` what limits the run, `predict` what a flag change "
    "would give, `compare` what a past change cost, `campaign_status` how a tuning campaign goes. Numbers "
    "carry units; times are epoch seconds."
)


def build_server(backend: Backend, control: bool) -> MCPServer:
    server: MCPServer = MCPServer("kvwatch", instructions=INSTRUCTIONS, log_level="WARNING")
    register_watching(server, backend)
    register_deciding(server, backend)
    register_campaign_status(server, backend)
    register_resources(server, backend)
    if control:
        register_restart(server, backend)
        register_campaign_control(server, backend)
    return server
