"""What the served app lets in: read-only Hayhooks, an optional bearer token, CORS allow-list, Host check, no
cross-site writes, and error bodies without server paths; and what a plain Hayhooks server must set to serve the
wrappers at all.

The policy comes from the environment (see README "Serving securely"):

- ``ADAPTIVE_API_TOKEN``: when set, every route (REST, ``/v1/chat/completions``, ``/mcp``) needs
  ``Authorization: Bearer <token>``; read as a Haystack ``Secret``. The API docs (``/docs``, ``/redoc``,
  ``/openapi.json``) stay open: they describe the API and hold no data.
- ``ADAPTIVE_CORS_ORIGINS``: comma-separated origins allowed to call the API from a browser (default: none). A
  write (any method but GET/HEAD/OPTIONS) that a page of any other origin sends is refused with 403
  (:mod:`~adaptive_retrieval.pipelines.serving.cross_site`); the server's own pages (``/docs``, ``/diagrams``) may
  write.
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
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field

from haystack.utils import Secret
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from adaptive_retrieval.components import settings
from adaptive_retrieval.pipelines.processes.owner_client import TOKEN_ENV
from adaptive_retrieval.pipelines.serving.cross_site import cross_site_problem

logger = logging.getLogger(__name__)

CORS_ORIGINS_ENV = "ADAPTIVE_CORS_ORIGINS"
ALLOWED_HOSTS_ENV = "ADAPTIVE_ALLOWED_HOSTS"
DEV_DEPLOY_ENV = "ADAPTIVE_DEV_ALLOW_DEPLOY"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
#: Where MCP is served: every request to it is checked for a foreign origin, reads too (``GET`` opens a stream).
MCP_PATH = "/mcp"
#: Documentation routes answered without a token: they describe the API and hold no data.
PUBLIC_PATHS = ("/docs", "/redoc", "/openapi.json")


def _env_list(name: str) -> tuple[str, ...]:
    return settings.items(name)


def _flag(name: str) -> bool:
    return settings.flag(name)


def deploy_routes_allowed() -> bool:
    """Whether the development flag ``$ADAPTIVE_DEV_ALLOW_DEPLOY`` turns Hayhooks' deploy/undeploy routes on."""
    return _flag(DEV_DEPLOY_ENV)


_GUARDED = False


def mark_guarded() -> None:
    """Record that this process serves through :class:`GuardMiddleware` (``create_app`` in the app module)."""
    global _GUARDED  # one process-wide fact, set by the app factory
    _GUARDED = True


class UnsafeServerError(SystemExit):
    """Stops a plain Hayhooks server whose settings would expose the pipelines unsafely; the message says what to set.

    A ``SystemExit`` on purpose: Hayhooks catches ``Exception`` around each wrapper's ``setup()`` (it logs a warning
    and starts without that pipeline), so only an exception outside ``Exception`` stops its start-up. Under
    ``HAYHOOKS_DURABLE_MODE`` the app is not built; without it uvicorn reports "Application startup failed" and
    exits with status 3.
    """


def plain_hayhooks_problems() -> list[str]:
    """What makes the running (plain) Hayhooks server unsafe for the wrappers: deploy routes, a CORS policy that
    lets any web page read answers, a token it cannot enforce. Empty under ``adaptive-retrieval serve``."""
    from hayhooks.settings import settings

    if _GUARDED:
        return []
    problems = []
    if not settings.durable_mode and not deploy_routes_allowed():
        problems.append(
            "it has the /deploy_files, /deploy-yaml and /undeploy routes, so anyone who can reach it runs code as "
            "this user: set HAYHOOKS_DURABLE_MODE=true (pipelines fixed at start-up, no deploy routes; "
            f"${DEV_DEPLOY_ENV}=1 keeps them for development only)"
        )
    if "*" in settings.cors_allow_origins or settings.cors_allow_origin_regex:
        problems.append(
            "its CORS policy lets every web page call it and read the answers (Hayhooks' default): set "
            "HAYHOOKS_CORS_ALLOW_ORIGINS='[]' (or a JSON list of your own origins) and leave "
            "HAYHOOKS_CORS_ALLOW_ORIGIN_REGEX unset"
        )
    if Secret.from_env_var(TOKEN_ENV, strict=False).resolve_value():
        problems.append(
            f"${TOKEN_ENV} is set but plain `hayhooks run` cannot require it: unset it, or serve with "
            "`adaptive-retrieval serve`"
        )
    return problems


def require_safe_hayhooks() -> None:
    """Stop a plain ``hayhooks run`` whose settings would expose this package's pipelines unsafely.

    Called by every wrapper's ``setup()`` (query, indexing, diagrams); does nothing under ``adaptive-retrieval
    serve``. The server then refuses to start, with one message that lists what to set (see
    :func:`plain_hayhooks_problems`).

    :raises UnsafeServerError: with what to set, or to run ``adaptive-retrieval serve`` instead.
    """
    if problems := plain_hayhooks_problems():
        msg = (
            "adaptive-retrieval refuses to serve its pipelines from this Hayhooks server: "
            + "; ".join(problems)
            + ". Or run `adaptive-retrieval serve`, which needs none of these settings."
        )
        logger.error(msg)
        raise UnsafeServerError(msg)


def guard_request(headers: Headers | None) -> None:
    """For a wrapper served by plain Hayhooks (which hands it the request headers when ``run_api`` declares
    ``headers: Headers | None = None``), what :class:`GuardMiddleware` does for ``adaptive-retrieval serve``: refuse
    a foreign ``Host`` when bound to loopback (421: DNS rebinding) and a write that a web page of another origin
    sent (403; the origins allowed besides the server's own are Hayhooks' ``HAYHOOKS_CORS_ALLOW_ORIGINS``).

    Under ``serve`` the guard has checked the request already; without headers (an MCP call, Python) there is no
    browser to check.

    :raises fastapi.HTTPException: 421 or 403 with the reason.
    """
    if headers is None or _GUARDED:
        return
    from fastapi import HTTPException
    from hayhooks.settings import settings

    hosts = allowed_hosts(settings.host)
    if hosts is not None and host_name(headers.get("host", "")) not in hosts:
        detail = "Unknown Host header: this server answers only to " + ", ".join(sorted(hosts))
        logger.warning("Refused a request for Host %r (DNS rebinding?)", headers.get("host"))
        raise HTTPException(status_code=421, detail=detail)
    if problem := cross_site_problem("POST", headers, settings.cors_allow_origins, "HAYHOOKS_CORS_ALLOW_ORIGINS"):
        logger.warning("%s", problem)
        raise HTTPException(status_code=403, detail=problem)


def is_guarded() -> bool:
    """Whether this process serves through :class:`GuardMiddleware` (``adaptive-retrieval serve``)."""
    return _GUARDED


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


def allowed_hosts(host: str) -> frozenset[str] | None:
    """The ``Host`` names a server bound to ``host`` answers: the loopback names plus ``$ADAPTIVE_ALLOWED_HOSTS``;
    ``None`` (any) when bound beyond loopback without that list (a proxy checks ``Host`` then)."""
    extra = frozenset(host_name(h) for h in _env_list(ALLOWED_HOSTS_ENV))
    return LOOPBACK_NAMES | extra if is_loopback(host) or extra else None


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
        return cls(
            token=token, cors_origins=origins, allowed_hosts=allowed_hosts(host), allow_deploy=deploy_routes_allowed()
        )

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


#: Header a deliberate 5xx answer carries from this package's code to :class:`GuardMiddleware`: its reason is meant
#: for the client (a full disk, a busy indexer) and names no server path. The guard passes such an answer on (and
#: logs it) without the header; every other 5xx body is replaced.
PUBLIC_REASON_HEADER = "x-adaptive-public-reason"


def public_server_error(status_code: int, detail: str, headers: dict[str, str] | None = None) -> Exception:
    """An ``HTTPException`` for a deliberate 5xx whose ``detail`` the client should read (507 disk full, 503 indexer
    busy): :class:`GuardMiddleware` lets its reason through. ``detail`` must name no server path.

    Usage::

        raise public_server_error(507, err.public_message()) from err
    """
    from fastapi import HTTPException

    if status_code < 500:
        msg = f"public_server_error is for 5xx answers (a 4xx reason reaches the client anyway), got {status_code}"
        raise ValueError(msg)
    return HTTPException(status_code=status_code, detail=detail, headers={**(headers or {}), PUBLIC_REASON_HEADER: "1"})


async def _send_json(send: Send, status: int, detail: str, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    body = json.dumps({"detail": detail}).encode()
    start_headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": [*start_headers, *headers]})
    await send({"type": "http.response.body", "body": body})


class GuardMiddleware:
    """ASGI middleware in front of the whole app (REST, chat, MCP): refuses a foreign ``Host`` (421), a write sent
    by a web page of a foreign origin (403) and a missing or wrong bearer token (401), and replaces the body of every
    5xx answer with a generic message, so that no server path or stack detail reaches a client (the original is
    logged).

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
        method = scope.get("method", "GET") if scope["type"] == "http" else "WEBSOCKET"
        scheme = {"ws": "http", "wss": "https"}.get(scope.get("scheme", "http"), scope.get("scheme", "http"))
        mcp = scope["path"] == MCP_PATH or scope["path"].startswith(MCP_PATH + "/")
        problem = cross_site_problem(method, headers, self.policy.cors_origins, scheme=scheme, every_method=mcp)
        if problem:
            logger.warning("%s (%s %s)", problem, method, scope["path"])
            await _refuse(scope, send, 403, problem)
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
    """``send`` with the body of a 5xx answer replaced by a generic message (the original goes to the log), unless
    the answer is a deliberate one (:func:`public_server_error`): that one goes on without its marker header."""
    state: dict[str, object] = {"status": None, "body": b""}
    marker = PUBLIC_REASON_HEADER.encode()

    async def guarded(message: Message) -> None:
        if message["type"] == "http.response.start" and message["status"] >= 500:
            headers = message.get("headers", [])
            if any(k.lower() == marker for k, _ in headers):
                logger.warning("%s answered %s with its reason (deliberate)", path, message["status"])
                await send({**message, "headers": [(k, v) for k, v in headers if k.lower() != marker]})
                return
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
