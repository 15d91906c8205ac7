"""Refuse writes that a web page of another origin makes a browser send (cross-site request forgery).

A page on any site can make the browser send a "simple" request to a server on this machine without asking it
first (a ``POST`` of a multipart form or of ``text/plain``, ``fetch(..., {mode: "no-cors"})``): CORS only keeps the
page from *reading* the answer, not the server from acting on it. Browsers say where such a request comes from:
``Origin`` on every request but ``GET``/``HEAD``, and ``Sec-Fetch-Site`` (``same-origin``, ``same-site``,
``cross-site`` or ``none``). A state-changing request (any method but ``GET``, ``HEAD``, ``OPTIONS``; and every
WebSocket) is refused when it names an origin that is neither the server's own (the scheme and ``Host`` it was sent
to: its ``/docs`` and ``/diagrams`` pages) nor an allowed one, or, without ``Origin``, when ``Sec-Fetch-Site`` says
another site sent it. Clients that are not browsers (curl, httpx, the CLI, MCP clients) send neither header and
are not affected.

Usage::

    problem = cross_site_problem("POST", headers, allowed_origins=("http://localhost:5173",))
    if problem:
        ...  # answer 403 with it
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

logger = logging.getLogger(__name__)

#: Methods that never change state here (a ``GET`` route only reads).
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: ``Sec-Fetch-Site`` values of requests the user made themselves or a page of this very server made.
OWN_FETCH_SITES = frozenset({"same-origin", "none"})


def normalise_origin(origin: str) -> str | None:
    """``scheme://host[:port]`` in lower case, or ``None`` for ``null`` and anything that is not an http(s) origin."""
    parts = urlsplit(origin.strip().lower())
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/"):
        return None
    return f"{parts.scheme}://{parts.netloc}"


def cross_site_problem(
    method: str,
    headers: Mapping[str, str],
    allowed_origins: Iterable[str] = (),
    setting: str = "$ADAPTIVE_CORS_ORIGINS",
    scheme: str = "http",
    every_method: bool = False,
) -> str | None:
    """Why a request must be refused as a cross-site write, or ``None``.

    :param method: the HTTP method (``"WEBSOCKET"`` for a WebSocket handshake, which is always checked).
    :param headers: the request headers (case-insensitive mapping, e.g. Starlette's ``Headers``).
    :param allowed_origins: origins besides the server's own whose pages may write.
    :param setting: where ``allowed_origins`` come from, named in the message.
    :param scheme: the scheme the request arrived by (``http``, or ``https`` behind a TLS proxy): the server's own
        origin is ``scheme://Host``, so a page at ``https://host`` is not the origin of ``http://host``.
    :param every_method: check ``GET``/``HEAD``/``OPTIONS`` too (MCP's ``GET /mcp`` opens a stream: the MCP
        specification asks servers to check ``Origin`` on every request).
    """
    if method.upper() in SAFE_METHODS and not every_method:
        return None
    origin = headers.get("origin")
    if origin is not None:
        own = f"{scheme.strip().lower()}://{headers.get('host', '').strip().lower()}"
        found = normalise_origin(origin)
        if found is not None and (found == own or found in _normalised(allowed_origins)):
            return None
        return (
            f"Cross-site request refused: a web page at {origin!r} may not send {method.upper()} requests to this "
            f"server; only its own pages and the origins listed in {setting} may"
        )
    site = (headers.get("sec-fetch-site") or "").strip().lower()
    if site and site not in OWN_FETCH_SITES:
        return (
            f"Cross-site request refused: the browser says another site ({site}) sent this {method.upper()} "
            "request, and it names no allowed origin"
        )
    return None


def _normalised(origins: Iterable[str]) -> set[str]:
    return {found for origin in origins if (found := normalise_origin(origin)) is not None}
