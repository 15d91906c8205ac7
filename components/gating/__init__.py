"""Quality gate and the corrective loop: judge retrieved evidence, retry with a broader strategy, or flag it.

Public names, imported on first use (nothing else of the family loads with them)::

    from adaptive_retrieval.components.gating import QualityGate
"""

from typing import TYPE_CHECKING

from adaptive_retrieval.components.lazy_exports import lazy_exports

_import_structure = {
    "attempts": ["AttemptRecord", "RetryState"],
    "gate_model": ["GateModel"],
    "quality_gate": ["QualityGate"],
    "retry_loop": ["RetryLoop"],
    "lean_answer": ["LeanAnswer"],
    "reader": ["ChatReader", "ModelReader"],
}

if TYPE_CHECKING:
    from adaptive_retrieval.components.gating.attempts import AttemptRecord as AttemptRecord
    from adaptive_retrieval.components.gating.attempts import RetryState as RetryState
    from adaptive_retrieval.components.gating.gate_model import GateModel as GateModel
    from adaptive_retrieval.components.gating.lean_answer import LeanAnswer as LeanAnswer
    from adaptive_retrieval.components.gating.quality_gate import QualityGate as QualityGate
    from adaptive_retrieval.components.gating.reader import ChatReader as ChatReader
    from adaptive_retrieval.components.gating.reader import ModelReader as ModelReader
    from adaptive_retrieval.components.gating.retry_loop import RetryLoop as RetryLoop

__getattr__, __dir__, __all__ = lazy_exports(__name__, _import_structure)
