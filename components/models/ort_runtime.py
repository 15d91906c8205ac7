"""ONNX Runtime, imported with its telemetry off: the one way the model components get the ``onnxruntime`` module.

``adaptive_retrieval.components`` sets ``ORT_DISABLE_TELEMETRY=1`` before anything imports ONNX Runtime (that stops
its events for the process); :func:`onnxruntime_quiet` also calls ONNX Runtime's public
``disable_telemetry_events()`` for a process that imported it earlier, unless the user opted in with
``ORT_DISABLE_TELEMETRY=0``.

Usage::

    ort = onnxruntime_quiet()
    session = ort.InferenceSession(path, sess_options=ort.SessionOptions())
"""

from __future__ import annotations

from types import ModuleType

from adaptive_retrieval.components import settings

#: ONNX Runtime's own switch; ``0`` (or ``false``/``no``/``off``) is the user's opt-in to its telemetry.
TELEMETRY_ENV = "ORT_DISABLE_TELEMETRY"


def telemetry_opted_in() -> bool:
    """Whether the user turned ONNX Runtime's telemetry on (``ORT_DISABLE_TELEMETRY=0``)."""
    return (settings.text(TELEMETRY_ENV) or "1").lower() in ("0", "false", "no", "off")


def onnxruntime_quiet() -> ModuleType:
    """The ``onnxruntime`` module, with ``disable_telemetry_events()`` called unless the user opted in."""
    import onnxruntime

    if not telemetry_opted_in():
        onnxruntime.disable_telemetry_events()
    return onnxruntime
