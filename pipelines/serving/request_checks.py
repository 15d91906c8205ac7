"""Checks on JSON request bodies that Hayhooks' generated routes do not make, for the served app.

- ``POST /{pipeline}/run`` with JSON: a field the pipeline's request model does not declare is refused (422) instead
  of being dropped without a word (``{"query": "...", "filters": {...}}`` used to run unfiltered);
- ``POST /v1/chat/completions`` (and ``/chat/completions``, ``/v1/responses``, ``/responses``) naming a deployed
  pipeline that does not answer that API (``"model": "indexing"``) is refused (400) with the models that do,
  instead of Hayhooks' 501, which reads as a server fault;
- a JSON body nested too deeply to parse is refused (400);
- an MCP message (``POST /mcp``) whose JSON-RPC ``id`` is not a string, a number or null is refused (400, code
  -32600) instead of being taken for a notification (202);
- an MCP message (``POST /mcp``) holding ``NaN``, ``Infinity`` or a number too large for a float (``1e400``) is
  refused as the JSON-RPC parse error it is (400, code -32700): JSON has no such numbers, and the MCP SDK would
  turn them into ``null`` before any check could see them (``top_k: NaN`` answered with every document).

The rules are :mod:`~adaptive_retrieval.pipelines.validation`'s; this module only applies them to the HTTP
transport. Bodies of other routes, multipart uploads and bodies that are not JSON pass through untouched.

Usage::

    app.add_middleware(RequestChecks, registry=app.state.pipeline_registry)
"""

from __future__ import annotations

import json
import logging
import math
from typing import Any

from hayhooks import BasePipelineWrapper
from hayhooks.server.pipelines.registry import PipelineRegistry
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from adaptive_retrieval.components.errors import InputError
from adaptive_retrieval.pipelines.validation import check_fields

logger = logging.getLogger(__name__)

#: OpenAI-compatible routes → the wrapper methods (sync, async) one of which a model must implement.
OPENAI_ROUTES = {
    "/v1/chat/completions": ("run_chat_completion", "run_chat_completion_async"),
    "/chat/completions": ("run_chat_completion", "run_chat_completion_async"),
    "/v1/responses": ("run_response", "run_response_async"),
    "/responses": ("run_response", "run_response_async"),
}


def implements(wrapper: Any, methods: tuple[str, ...]) -> bool:
    """Whether ``wrapper`` overrides one of ``methods`` of Hayhooks' ``BasePipelineWrapper``."""
    return any(getattr(type(wrapper), m, None) is not getattr(BasePipelineWrapper, m, None) for m in methods)


def _is_json(headers: Headers) -> bool:
    kind = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return not kind or kind == "application/json" or kind.endswith("+json")


#: Where MCP is served (``create_app``).
MCP_PATH = "/mcp"


class NonFiniteNumberError(InputError):
    """A JSON text holds ``NaN``, ``Infinity`` or a number beyond a float's range."""


def _refuse_constant(name: str) -> float:
    msg = f"the JSON holds {name}, which is not a JSON number"
    raise NonFiniteNumberError(msg)


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        msg = f"the JSON holds {text}, a number too large for a float"
        raise NonFiniteNumberError(msg)
    return value


def strict_json(body: bytes) -> Any:
    """``json.loads`` that refuses ``NaN``, ``Infinity`` and numbers beyond a float's range.

    :raises NonFiniteNumberError: for such a number; ``ValueError`` for text that is not JSON.
    """
    return json.loads(body, parse_constant=_refuse_constant, parse_float=_finite)


class RequestChecks:
    """ASGI middleware applying the checks above; every other request passes through unchanged."""

    def __init__(self, app: ASGIApp, registry: PipelineRegistry) -> None:
        self.app = app
        self.registry = registry

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        wanted = scope["type"] == "http" and scope["method"] == "POST" and _is_json(Headers(scope=scope))
        if not wanted or not (path in OPENAI_ROUTES or path == MCP_PATH or self._run_route(path)):
            await self.app(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
        if problem := self.problem(path, body):
            status, detail = problem
            logger.info("Refused POST %s: %s", path, detail[:300])
            answer: dict[str, Any] = {"detail": detail}
            if path == MCP_PATH:  # what a JSON-RPC client reads: a parse error, or an invalid request
                code, kind = (-32600, "Invalid Request") if detail.startswith(INVALID_ID) else (-32700, "Parse error")
                answer = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": f"{kind}: {detail}"}}
            payload = json.dumps(answer).encode()
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": payload})
            return
        await self.app(scope, _replay(body, receive), send)

    def _run_route(self, path: str) -> str | None:
        parts = path.strip("/").split("/")
        return parts[0] if len(parts) == 2 and parts[1] == "run" and self.registry.get(parts[0]) else None

    def problem(self, path: str, body: bytes) -> tuple[int, str] | None:
        """``(status, reason)`` when the request must be refused, else ``None`` (bad JSON is FastAPI's to report)."""
        try:
            data = strict_json(body) if body else None
        except RecursionError:
            return 400, "The JSON body is nested too deeply to read"
        except NonFiniteNumberError as err:
            # REST's strict request models refuse these values themselves, with the field's name (422).
            return (400, f"{err}; send whole numbers (e.g. top_k: 5)") if path == MCP_PATH else None
        except ValueError:
            return None
        if path == MCP_PATH:
            return _jsonrpc_id_problem(data)
        if not isinstance(data, dict):
            return None
        if path in OPENAI_ROUTES:
            return self._model_problem(path, data)
        name = self._run_route(path)
        model = (self.registry.get_metadata(name) or {}).get("request_model") if name else None
        if model is None:
            return None
        try:
            check_fields(data, model.model_fields)
        except ValueError as err:
            return 422, str(err)
        return None

    def _model_problem(self, path: str, data: dict[str, Any]) -> tuple[int, str] | None:
        model, methods = data.get("model"), OPENAI_ROUTES[path]
        wrapper = self.registry.get(model) if isinstance(model, str) and model else None
        if wrapper is None or implements(wrapper, methods):
            return None  # an unknown model is Hayhooks' 404 to give
        able = sorted(n for n in self.registry.get_names() if implements(self.registry.get(n), methods))
        return 400, f"Model '{model}' does not answer {path}: use one of {able}"


#: How the refusal of a JSON-RPC message with an id of the wrong type begins.
INVALID_ID = "a JSON-RPC id must be"


def _jsonrpc_id_problem(data: Any) -> tuple[int, str] | None:
    """400 for a JSON-RPC message (or batch) whose ``id`` is not a string, a number or null (JSON-RPC 2.0, section
    4; MCP: a string or an integer). The MCP SDK took ``"id": {}`` for a notification and answered 202 Accepted."""
    for message in data if isinstance(data, list) else [data]:
        if not isinstance(message, dict) or "id" not in message:
            continue
        found = message["id"]
        if found is None or (isinstance(found, (str, int, float)) and not isinstance(found, bool)):
            continue
        kind = {bool: "a boolean", dict: "an object", list: "a list"}.get(type(found), type(found).__name__)
        return 400, f"{INVALID_ID} a string, a number or null; this one is {kind}"
    return None


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands the app the body read already, then the client's further messages."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
