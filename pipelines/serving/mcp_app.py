"""MCP over streamable HTTP, served by the REST app's own process: the same pipelines, the same store.

Only the pipelines that are MCP tools (``query``; ``indexing`` and ``diagrams`` set ``skip_mcp``) are listed,
and no Hayhooks core tool (deploy, undeploy, status) is: an MCP client can retrieve, nothing else. Arguments are
validated as REST validates a body (:func:`check_arguments`). A failed call answers ``isError`` with the reason.

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
from pydantic import ValidationError
from starlette.types import Receive, Scope, Send

from adaptive_retrieval.pipelines.validation import check_fields

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
        check_arguments(registry, name, arguments)
        return await run_pipeline_as_tool(registry, name, arguments)

    return server


def check_arguments(registry: PipelineRegistry, name: str, arguments: dict[str, Any]) -> None:
    """Validate a tool call's arguments as REST validates a request body: the pipeline's request model, strictly (a
    boolean or ``NaN`` is no ``top_k``), and no field it does not declare. Hayhooks hands MCP arguments to the
    wrapper's ``run_api`` unvalidated.

    :raises ValueError: naming each bad argument.
    """
    model = (registry.get_metadata(name) or {}).get("request_model")
    if model is None:
        return
    check_fields(arguments, model.model_fields)
    try:
        model.model_validate(arguments, strict=True)
    except ValidationError as err:
        reasons = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in err.errors())
        msg = f"Invalid arguments for '{name}': {reasons}"
        raise ValueError(msg) from None


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
