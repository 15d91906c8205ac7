"""Asking the server that owns a local store: one process owns an embedded index, so a command line run while a
server holds it sends its request to that server instead of opening the folder a second time.

Usage::

    owner = store_owner(path)   # adaptive_retrieval.pipelines.processes.ownership
    if owner:
        result = call_server(owner, "POST", "/query/run", json={"query": "what is MMR?"})
"""

from __future__ import annotations

import ipaddress
from typing import Any
from urllib.parse import urlsplit

from adaptive_retrieval.components import settings
from adaptive_retrieval.components.errors import AdaptiveRetrievalError

#: The bearer token a served app requires when set (its check: :mod:`adaptive_retrieval.pipelines.serving.security`); a
#: client sends it.
TOKEN_ENV = "ADAPTIVE_API_TOKEN"


def loopback_url(url: Any) -> bool:
    """Whether ``url`` is an ``http(s)://`` URL on a loopback address (``127.0.0.0/8``, ``::1``, ``localhost``):
    the only place the CLI sends the user's token to on the word of an owner file."""
    if not isinstance(url, str):
        return False
    try:
        parts = urlsplit(url)
        host = parts.hostname
        _ = parts.port  # a port that is not a number raises ValueError
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not host or parts.username or parts.password:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bearer_headers() -> dict[str, str]:
    """``{"Authorization": "Bearer <token>"}`` when ``$ADAPTIVE_API_TOKEN`` is set (the value the served app's guard
    compares, unstripped), else ``{}``: what a client of this package's server sends."""
    token = settings.raw(TOKEN_ENV)
    return {"Authorization": f"Bearer {token}"} if token else {}


class ServerCallError(AdaptiveRetrievalError):
    """The owning server could not answer the request; the message says what to do."""


def owned_message(owner: dict[str, Any]) -> str:
    """``the store X is served by process N at URL``."""
    return f"the store {owner.get('store')} is served by process {owner['pid']} at {owner.get('url')}"


def call_server(owner: dict[str, Any], method: str, route: str, **kwargs: Any) -> Any:
    """``method`` ``route`` on the server that owns the store, with ``$ADAPTIVE_API_TOKEN`` when set.

    :returns: the JSON answer.
    :raises ServerCallError: naming the server, when it does not answer, wants a token, or answers an error.
    """
    import httpx

    if not loopback_url(owner.get("url")):  # store_owner checked it; the token never leaves the machine regardless
        msg = f"{owned_message(owner)}, which is not a loopback URL: nothing was sent"
        raise ServerCallError(msg)
    try:
        response = httpx.request(method, f"{owner['url']}{route}", headers=bearer_headers(), timeout=600, **kwargs)
    except httpx.HTTPError as err:
        msg = (
            f"{owned_message(owner)}, which did not answer ({err}); try again, or delete {owner.get('file')} "
            "if that process is not this store's server"
        )
        raise ServerCallError(msg) from err
    if response.status_code == 401:
        msg = f"{owned_message(owner)}, which requires a token: set ${TOKEN_ENV}"
        raise ServerCallError(msg)
    if response.status_code != 200:
        try:
            detail = response.json().get("detail", response.text)
        except ValueError:
            detail = response.text
        msg = f"{owned_message(owner)}, which answered {response.status_code}: {detail}"
        raise ServerCallError(msg)
    try:
        return response.json()
    except ValueError as err:
        msg = f"{owned_message(owner)}, which answered 200 with a body that is not JSON: {response.text[:200]!r}"
        raise ServerCallError(msg) from err


def answer_field(owner: dict[str, Any], answer: Any, key: str, kind: type) -> Any:
    """``answer[key]`` of a server's JSON answer, checked to be a ``kind``.

    :raises ServerCallError: naming the server and what it answered instead (a server of another version, or not
        this package's server at all), rather than a ``KeyError`` traceback.
    """
    value = answer.get(key) if isinstance(answer, dict) else None
    if not isinstance(value, kind):
        msg = (
            f"{owned_message(owner)}, which answered without the expected '{key}' ({kind.__name__}): "
            f"{str(answer)[:200]!r}; is it this package's server, of the same version?"
        )
        raise ServerCallError(msg)
    return value
