"""Where and at which precision the models run when a component is not told: resolved at warm-up from the
environment, so the shipped YAML (``device: null``, ``precision: null``) runs on a GPU host by setting two variables.

Usage::

    resolve_device(None)         # $ADAPTIVE_DEVICE, else "cpu"
    resolve_precision(None)      # $ADAPTIVE_PRECISION, else "int8"
    resolve_precision("fp32")    # an explicit value wins over the environment
"""

from __future__ import annotations

from adaptive_retrieval.components import settings

DEVICE_ENV = "ADAPTIVE_DEVICE"
PRECISION_ENV = "ADAPTIVE_PRECISION"
DEFAULT_DEVICE = "cpu"
DEFAULT_PRECISION = "int8"


def resolve_device(device: str | None) -> str:
    """``device``, else ``$ADAPTIVE_DEVICE``, else ``cpu``."""
    return device or settings.text(DEVICE_ENV) or DEFAULT_DEVICE


def resolve_precision(precision: str | None) -> str:
    """``precision``, else ``$ADAPTIVE_PRECISION``, else ``int8``."""
    return precision or settings.text(PRECISION_ENV) or DEFAULT_PRECISION
