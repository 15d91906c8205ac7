"""Per-stage timings of a pipeline run, collected through Haystack's tracing hooks.

Timings go to a context variable, so concurrent runs (threads of a server) each see their own.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator
from typing import Any

from haystack import tracing
from haystack.tracing import Span, Tracer

_CURRENT: contextvars.ContextVar[dict[str, float] | None] = contextvars.ContextVar("stage_times", default=None)


class _StageSpan(Span):
    def __init__(self, inner: Span | None) -> None:
        self.inner = inner

    def set_tag(self, key: str, value: Any) -> None:
        if self.inner is not None:
            self.inner.set_tag(key, value)

    def raw_span(self) -> Any:
        return self.inner.raw_span() if self.inner is not None else None


class StageTimingTracer(Tracer):
    """Records the wall time of every ``haystack.component.run`` span, delegating to a tracer already enabled."""

    def __init__(self, inner: Tracer | None = None) -> None:
        self.inner = inner

    @contextlib.contextmanager
    def trace(
        self, operation_name: str, tags: dict[str, Any] | None = None, parent_span: Span | None = None
    ) -> Iterator[Span]:
        inner_cm = self.inner.trace(operation_name, tags, parent_span) if self.inner else contextlib.nullcontext()
        start = time.perf_counter()
        with inner_cm as inner_span:
            try:
                yield _StageSpan(inner_span)
            finally:
                times = _CURRENT.get()
                if times is not None and operation_name == "haystack.component.run" and tags:
                    name = tags.get("haystack.component.name", "?")
                    times[name] = times.get(name, 0.0) + (time.perf_counter() - start) * 1000

    def current_span(self) -> Span | None:
        return self.inner.current_span() if self.inner else None


def _install() -> None:
    actual = getattr(tracing.tracer, "actual_tracer", None)
    if not isinstance(actual, StageTimingTracer):
        inner = actual if actual is not None and type(actual).__name__ != "NullTracer" else None
        tracing.enable_tracing(StageTimingTracer(inner))


@contextlib.contextmanager
def stage_timings() -> Iterator[dict[str, float]]:
    """Collect ``{component name: milliseconds}`` for pipeline runs inside the ``with`` block."""
    _install()
    times: dict[str, float] = {}
    token = _CURRENT.set(times)
    try:
        yield times
    finally:
        _CURRENT.reset(token)
