"""Import Haystack in a serving process without importing torch.

Haystack's ``haystack.utils.device`` runs ``import torch`` when Haystack is imported (inside a ``LazyImport``, which
defers only a *failed* import), so in an environment that has torch (the ``models`` extra, a development venv)
every process that imports Haystack loads it: about 200 MB of resident memory per serving process (a worker took
435 MB RSS instead of 194 MB), and none of it is used on the ONNX path this package serves.

:func:`import_haystack_without_torch` imports Haystack while ``torch`` is marked unimportable (``sys.modules["torch"]
= None``, Python's documented way to make an import fail), then removes the mark: Haystack's device module then
holds a deferred "PyTorch must be installed" for its own torch-based components, and everything imported afterwards
(this package's PyTorch back end for ``fp16``/``bf16``/``fp8``, the gate's reader) imports torch as usual when it
runs. Haystack itself is not changed. ``adaptive-retrieval serve`` calls it in each serving process (the single
server, each worker, the store host) before anything imports Haystack.

Usage::

    from adaptive_retrieval.pipelines.processes.torch_free import import_haystack_without_torch

    import_haystack_without_torch()  # first, before any module that imports Haystack
"""

from __future__ import annotations

import importlib
import logging
import sys

logger = logging.getLogger(__name__)


def import_haystack_without_torch() -> bool:
    """Import Haystack with torch kept out of the process; ``False`` (nothing done) when Haystack or torch is
    imported already."""
    if "haystack" in sys.modules or "torch" in sys.modules:
        return False
    sys.modules["torch"] = None  # type: ignore[assignment]  # the import system's "not importable" mark
    try:
        importlib.import_module("haystack")
    finally:
        if sys.modules.get("torch", 0) is None:
            del sys.modules["torch"]
    return True
