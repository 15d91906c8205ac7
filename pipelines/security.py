"""What the served app lets in: read-only Hayhooks, an optional bearer token, CORS allow-list, Host check, and
error bodies without server paths.

The policy comes from the environment (see README "Serving securely"):

- ``ADAPTIVE_API_TOKEN``: when set, every route (REST, ``/v1/chat/completions``, ``/mcp``) needs
  ``Authorization: Bearer <token>``; read as a Haystack ``Secret``. The API docs (``/docs``, ``/redoc``,
  ``/openapi.json``) stay open: they describe the API and hold no data.
- ``ADAPTIVE_CORS_ORIGINS``: comma-separated origins allowed to call the API from a browser (default: none).
- ``ADAPTIVE_ALLOWED_HOSTS``: comma-separated ``Host`` names accepted besides the loopback names; when the server
  is bound to loopback, any other ``Host`` is refused (421), which stops DNS rebinding.
- ``ADAPTIVE_DEV_ALLOW_DEPLOY=1``: development only, brings back Hayhooks' ``/deploy_files``, ``/deploy-yaml`` and
  ``/undeploy/{name}`` routes (they run uploaded Python as the server's user).

Usage::

    policy = ServingPolicy.from_env(host="127.0.0.1")
    app.add_middleware(GuardMiddleware, policy=policy)
"""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field

from haystack.utils import Secret
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from adaptive_retrieval.pipelines.owner_client import TOKEN_ENV

logger = logging.getLogger(__name__)

CORS_ORIGINS_ENV = "ADAPTIVE_CORS_ORIGINS"
ALLOWED_HOSTS_ENV = "ADAPTIVE_ALLOWED_HOSTS"
DEV_DEPLOY_ENV = "ADAPTIVE_DEV_ALLOW_DEPLOY"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
#: Documentation routes answered without a token: they describe the API and hold no data.
PUBLIC_PATHS = ("/docs", "/redoc", "/openapi.json")


def _env_list(name: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in os.environ.get(name, "").split(",") if item.strip())


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def deploy_routes_allowed() -> bool:
    """Whether the development flag ``$ADAPTIVE_DEV_ALLOW_DEPLOY`` turns Hayhooks' deploy/undeploy routes on."""
    return _flag(DEV_DEPLOY_ENV)


_GUARDED = False


def mark_guarded() -> None:
    """Record that this process serves through :class:`GuardMiddleware` (``create_app`` in the app module)."""
    global _GUARDED  # one process-wide fact, set by the app factory
    _GUARDED = True


def require_safe_hayhooks() -> None:
    """Refuse to load a served pipeline into a Hayhooks app that would expose it unsafely.

    Called by the wrappers' ``setup()``: plain ``hayhooks run`` keeps Hayhooks' deploy/undeploy routes (remote
    code execution) unless ``HAYHOOKS_DURABLE_MODE=true`` fixes the pipeline set, and it cannot enforce
    ``$ADAPTIVE_API_TOKEN``.

    :raises RuntimeError: with what to run instead.
    """
    from hayhooks.settings import settings

    if not settings.durable_mode and not deploy_routes_allowed():
        msg = (
            "Refusing to serve this pipeline: this Hayhooks server has the /deploy_files, /deploy-yaml and "
            "/undeploy routes (and MCP deploy tools), so anyone who can reach it runs code as this user. Run "
            "`adaptive-retrieval serve`, or `HAYHOOKS_DURABLE_MODE=true hayhooks run --pipelines-dir pipelines` "
            f"(pipelines fixed at start-up, no deploy routes); ${DEV_DEPLOY_ENV}=1 allows them for development."
        )
        raise RuntimeError(msg)
    if not _GUARDED and Secret.from_env_var(TOKEN_ENV, strict=False).resolve_value():
        msg = (
            f"${TOKEN_ENV} is set but plain `hayhooks run` cannot require it: serve with `adaptive-retrieval serve` "
            "(or unset the variable to serve without authentication)"
        )
        raise RuntimeError(msg)


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a bind address or name) is a loopback interface."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_name(header: str) -> str:
    """The name part of a ``Host`` header: ``"127.0.0.1:1416"`` → ``"127.0.0.1"``, ``"[::1]:80"`` → ``"::1"``."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


@dataclass(frozen=True)
class ServingPolicy:
    """What the guard enforces; build it with :meth:`from_env`."""

    token: Secret | None = None
    cors_origins: tuple[str, ...] = ()
    #: ``Host`` names accepted; ``None`` accepts any (bound beyond loopback without a list: a proxy decides).
    allowed_hosts: frozenset[str] | None = field(default_factory=lambda: LOOPBACK_NAMES)
    allow_deploy: bool = False

    @classmethod
    def from_env(cls, host: str = "127.0.0.1") -> ServingPolicy:
        """The policy for a server bound to ``host``, from ``$ADAPTIVE_API_TOKEN``, ``$ADAPTIVE_CORS_ORIGINS``,
        ``$ADAPTIVE_ALLOWED_HOSTS`` and ``$ADAPTIVE_DEV_ALLOW_DEPLOY``."""
        token = Secret.from_env_var(TOKEN_ENV, strict=False)
        if not token.resolve_value():
            token = None
        if "*" in (origins := _env_list(CORS_ORIGINS_ENV)):
            msg = f"${CORS_ORIGINS_ENV} must list origins (e.g. http://localhost:3000), not '*'"
            raise ValueError(msg)
        extra = frozenset(host_name(h) for h in _env_list(ALLOWED_HOSTS_ENV))
        allowed = LOOPBACK_NAMES | extra if is_loopback(host) or extra else None
        return cls(token=token, cors_origins=origins, allowed_hosts=allowed, allow_deploy=deploy_routes_allowed())

    def token_matches(self, authorization: str | None) -> bool:
        """Constant-time check of an ``Authorization`` header against ``Bearer <token>``."""
        if self.token is None:
            return True
        value = self.token.resolve_value()
        if not value:  # the variable vanished after start-up: refuse rather than compare with "None"
            return False
        return secrets.compare_digest((authorization or "").encode(), f"Bearer {value}".encode())


def _is_public(path: str) -> bool:
    return any(path == p or path.startswith(p + "/") for p in PUBLIC_PATHS)


async def _refuse(
    scope: Scope, send: Send, status: int, detail: str, headers: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    if scope["type"] == "websocket":  # 1008: policy violation
        await send({"type": "websocket.close", "code": 1008, "reason": detail[:120]})
        return
    await _send_json(send, status, detail, headers)


async def _send_json(send: Send, status: int, detail: str, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    body = json.dumps({"detail": detail}).encode()
    start_headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": [*start_headers, *headers]})
    await send({"type": "http.response.body", "body": body})


class GuardMiddleware:
    """ASGI middleware in front of the whole app (REST, chat, MCP): refuses a foreign ``Host`` (421) and a missing
    or wrong bearer token (401), and replaces the body of every 5xx answer with a generic message, so that no
    server path or stack detail reaches a client (the original is logged).

    Usage::

        app.add_middleware(GuardMiddleware, policy=ServingPolicy.from_env(host="127.0.0.1"))
    """

    def __init__(self, app: ASGIApp, policy: ServingPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        allowed = self.policy.allowed_hosts
        if allowed is not None and host_name(headers.get("host", "")) not in allowed:
            logger.warning("Refused a request for Host %r (DNS rebinding?)", headers.get("host"))
            detail = "Unknown Host header: this server answers only to " + ", ".join(sorted(allowed))
            await _refuse(scope, send, 421, detail)
            return
        if not _is_public(scope["path"]) and not self.policy.token_matches(headers.get("authorization")):
            detail = "Missing or wrong bearer token: send 'Authorization: Bearer <token>' ($ADAPTIVE_API_TOKEN)"
            await _refuse(scope, send, 401, detail, [(b"www-authenticate", b"Bearer")])
            return
        if scope["type"] == "websocket":
            await self.app(scope, receive, send)
            return
        await self.app(scope, receive, _scrubbing_send(send, scope["path"]))


def _scrubbing_send(send: Send, path: str) -> Send:
    """``send`` with the body of a 5xx answer replaced by a generic message (the original goes to the log)."""
    state: dict[str, object] = {"status": None, "body": b""}

    async def guarded(message: Message) -> None:
        if message["type"] == "http.response.start" and message["status"] >= 500:
            state["status"] = message["status"]
            state["request_id"] = [(k, v) for k, v in message.get("headers", []) if k.lower() == b"x-request-id"]
            return
        if state["status"] is not None and message["type"] == "http.response.body":
            state["body"] = state["body"] + message.get("body", b"")  # type: ignore[operator]
            if message.get("more_body", False):
                return
            original = state["body"].decode("utf-8", "replace")[:2000]  # type: ignore[union-attr]
            logger.error("%s answered %s: %s", path, state["status"], original)
            detail = "Internal server error: the server log has the details"
            await _send_json(send, state["status"], detail, state["request_id"])  # type: ignore[arg-type]
            return
        await send(message)

    return guarded
