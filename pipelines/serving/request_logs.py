"""What the serving processes log per request: nothing that names a query's text unless the user asks for the
access log (``$ADAPTIVE_ACCESS_LOG=1``).

Kept apart from the served app so the CLI can quiet the logs before it checks that the ``serve`` extra (FastAPI,
Hayhooks) is installed: a wheel without it must get the one-line install hint, not an import error.
"""

from __future__ import annotations

import logging
import os

from adaptive_retrieval.components import settings as app_settings

#: Environment variable: 1 logs one line per HTTP request (see access_log_on).
ACCESS_LOG_ENV = "ADAPTIVE_ACCESS_LOG"


def access_log_on() -> bool:
    """Whether the server logs one line per HTTP request (``$ADAPTIVE_ACCESS_LOG=1``; uvicorn's access log, through
    Hayhooks' loguru in a one-process server). Off by default: `serve --workers N` never logged requests, and in
    one process it is CPU per request (``scripts/lab/profile_server.py`` shows its share); errors are logged either
    way."""
    return app_settings.flag(ACCESS_LOG_ENV)


#: Loggers that write one line or more per request at INFO: Haystack's "Running component ..." (about 13 per query),
#: httpx's "HTTP Request: ..." (a worker's forwarded upload or delete) and, through loguru, Hayhooks' "Running
#: pipeline ..." with the request's fields (the query's text).
_PER_REQUEST_LOGGERS = ("haystack", "httpx")


def quiet_request_logs() -> None:
    """Unless the access log is on (``$ADAPTIVE_ACCESS_LOG=1``), keep what each request carries out of the log:
    Haystack's per-component lines and Hayhooks' per-run lines (which name the query's text) drop to warnings and
    errors. Call it before Hayhooks is imported: Hayhooks reads its documented level variable, ``LOG``, then (an
    explicit ``LOG`` or ``HAYHOOKS_LOG_LEVEL`` is kept)."""
    if access_log_on():
        return
    if not (app_settings.is_set("LOG") or app_settings.is_set("HAYHOOKS_LOG_LEVEL")):
        os.environ["LOG"] = "WARNING"
    for name in _PER_REQUEST_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
