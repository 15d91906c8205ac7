"""Asking the server that owns a local store: one process owns an embedded index, so a command line run while a
server holds it sends its request to that server instead of opening the folder a second time.

Usage::

    owner = store_owner(path)   # adaptive_retrieval.pipelines.ownership
    if owner:
        result = call_server(owner, "POST", "/query/run", json={"query": "what is MMR?"})
"""

from __future__ import annotations

from typing import Any

from adaptive_retrieval.components.errors import AdaptiveRetrievalError

#: The bearer token a served app requires when set (its check: :mod:`adaptive_retrieval.pipelines.security`); a
#: client sends it.
TOKEN_ENV = "ADAPTIVE_API_TOKEN"


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
    from haystack.utils import Secret

    headers = {}
    if token := Secret.from_env_var(TOKEN_ENV, strict=False).resolve_value():
        headers["Authorization"] = f"Bearer {token}"
    try:
        response = httpx.request(method, f"{owner['url']}{route}", headers=headers, timeout=600, **kwargs)
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
    return response.json()
