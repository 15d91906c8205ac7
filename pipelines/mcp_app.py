"""MCP over streamable HTTP, served by the REST app's own process: the same pipelines, the same store.

Only the pipelines that are MCP tools (``query``; ``indexing`` and ``diagrams`` set ``skip_mcp``) are listed,
and no Hayhooks core tool (deploy, undeploy, status) is: an MCP client can retrieve, nothing else. A failed call
answers ``isError`` with the reason.

Usage::

    mcp = McpEndpoint(app.state.pipeline_registry)
    app.add_route("/mcp", mcp)                # a plain ASGI endpoint
    async with mcp.run(): ...                 # in the app's lifespan
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from hayhooks.server.pipelines.registry import PipelineRegistry
from hayhooks.server.utils.mcp_utils import list_pipelines_as_tools, run_pipeline_as_tool
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.types import TextContent, Tool
from starlette.types import Receive, Scope, Send

SERVER_NAME = "adaptive-retrieval"


def create_mcp_server(registry: PipelineRegistry) -> Server:
    """An MCP server whose tools are the registry's MCP-enabled pipelines, and nothing else."""
    server: Server = Server(SERVER_NAME)

    @server.list_tools()
    async def list_tools() -> list[Tool]:
        return await list_pipelines_as_tools(registry)

    @server.call_tool()
    async def call_tool(name: str, arguments: dict[str, Any]) -> list[TextContent]:
        # Only listed tools run: run_pipeline_as_tool alone would also run a pipeline that skips MCP.
        if name not in {tool.name for tool in await list_pipelines_as_tools(registry)}:
            msg = f"Unknown tool '{name}'"
            raise ValueError(msg)
        return await run_pipeline_as_tool(registry, name, arguments)

    return server


class McpEndpoint:
    """The ASGI endpoint of MCP's streamable HTTP transport (stateless, JSON answers) for one registry."""

    def __init__(self, registry: PipelineRegistry) -> None:
        self.manager = StreamableHTTPSessionManager(app=create_mcp_server(registry), stateless=True, json_response=True)

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """The session manager's task group; enter it in the app's lifespan (once per endpoint)."""
        async with self.manager.run():
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.manager.handle_request(scope, receive, send)
