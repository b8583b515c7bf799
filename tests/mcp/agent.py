"""An agent's side of `kvwatch mcp`: the SDK's own Client over stdio (the command as a subprocess) or
over streamable HTTP (/mcp of the demo's app), each call's answer kept with its size."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.terminal.demo import REPO

T = TypeVar("T")
LIMIT = 4096  # bytes: every answer an agent reads stays under it


def in_thread(scenario: Callable[[], Awaitable[T]], timeout: float = 600) -> T:
    """asyncio.run in a thread of its own (a browser test before it may leave a loop running here)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, scenario()).result(timeout=timeout)  # type: ignore[arg-type]


@dataclass
class Answer:
    error: bool
    text: str
    progress: list[tuple[float, float | None, str | None]] = field(default_factory=list)

    @property
    def data(self) -> Any:
        return json.loads(self.text)


@dataclass
class Agent:
    client: Client
    answers: list[tuple[str, Answer]] = field(default_factory=list)

    async def tools(self) -> list[str]:
        return sorted(t.name for t in (await self.client.list_tools()).tools)

    async def call(self, name: str, **arguments: Any) -> Answer:
        progress: list[tuple[float, float | None, str | None]] = []

        async def noted(done: float, total: float | None, message: str | None) -> None:
            progress.append((done, total, message))

        result = await self.client.call_tool(name, arguments, progress_callback=noted)
        text = "".join(getattr(c, "text", "") for c in result.content)
        answer = Answer(bool(result.is_error), text, progress)
        self.answers.append((name, answer))
        return answer

    def oversized(self) -> list[tuple[str, int]]:
        return [(name, len(a.text.encode())) for name, a in self.answers if len(a.text.encode()) >= LIMIT]


@asynccontextmanager
async def over_stdio(url: str, token: str | None) -> AsyncIterator[Agent]:
    env = {k: v for k, v in os.environ.items() if k != "KVWATCH_TOKEN"}
    if token is not None:
        env["KVWATCH_TOKEN"] = token
    command = StdioServerParameters(command=sys.executable, args=["-m", "kvwatch.app", "mcp", "--url", url],
                                    env=env, cwd=str(REPO))
    async with Client(command) as client:
        yield Agent(client)


@asynccontextmanager
async def over_http(url: str, token: str | None) -> AsyncIterator[Agent]:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=600)) as http, \
            Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
        yield Agent(client)


TRANSPORTS = {"stdio": over_stdio, "http": over_http}
