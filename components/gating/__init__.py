"""Quality gate and the corrective loop: judge retrieved evidence, retry with a broader strategy, or flag it.

Public names, imported on first use (nothing else of the family loads with them)::

    from adaptive_retrieval.components.gating import QualityGate

Besides the components: the gate's signals (``SIGNALS``; ``asked_coverage``, ``asked_words``, ``unmatched`` and
``PREFIX_MIN`` of the answerability check, ``WordVectors`` for its soft matches) and its calibration (``auroc``,
``youden_threshold``, ``fit_logistic``, ``predict``, ``fit_asked_threshold``, ``fit_calibration`` with ``FITTED``
and ``DEFAULT_L2``; the files: ``calibration_path``, ``save_calibration``, ``validate_calibration``,
``load_prior`` of ``PRIOR_FILE``).
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
    "signals": ["SIGNALS"],
    "answerability": ["PREFIX_MIN", "asked_coverage", "asked_words", "unmatched"],
    "word_vectors": ["WordVectors"],
    "calibration": [
        "PRIOR_FILE",
        "auroc",
        "calibration_path",
        "fit_asked_threshold",
        "fit_logistic",
        "load_prior",
        "predict",
        "save_calibration",
        "validate_calibration",
        "youden_threshold",
    ],
    "self_calibration": ["DEFAULT_L2", "FITTED", "fit_calibration"],
}

if TYPE_CHECKING:
    from adaptive_retrieval.components.gating.answerability import PREFIX_MIN as PREFIX_MIN
    from adaptive_retrieval.components.gating.answerability import asked_coverage as asked_coverage
    from adaptive_retrieval.components.gating.answerability import asked_words as asked_words
    from adaptive_retrieval.components.gating.answerability import unmatched as unmatched
    from adaptive_retrieval.components.gating.attempts import AttemptRecord as AttemptRecord
    from adaptive_retrieval.components.gating.attempts import RetryState as RetryState
    from adaptive_retrieval.components.gating.calibration import PRIOR_FILE as PRIOR_FILE
    from adaptive_retrieval.components.gating.calibration import auroc as auroc
    from adaptive_retrieval.components.gating.calibration import calibration_path as calibration_path
    from adaptive_retrieval.components.gating.calibration import fit_asked_threshold as fit_asked_threshold
    from adaptive_retrieval.components.gating.calibration import fit_logistic as fit_logistic
    from adaptive_retrieval.components.gating.calibration import load_prior as load_prior
    from adaptive_retrieval.components.gating.calibration import predict as predict
    from adaptive_retrieval.components.gating.calibration import save_calibration as save_calibration
    from adaptive_retrieval.components.gating.calibration import validate_calibration as validate_calibration
    from adaptive_retrieval.components.gating.calibration import youden_threshold as youden_threshold
    from adaptive_retrieval.components.gating.gate_model import GateModel as GateModel
    from adaptive_retrieval.components.gating.lean_answer import LeanAnswer as LeanAnswer
    from adaptive_retrieval.components.gating.quality_gate import QualityGate as QualityGate
    from adaptive_retrieval.components.gating.reader import ChatReader as ChatReader
    from adaptive_retrieval.components.gating.reader import ModelReader as ModelReader
    from adaptive_retrieval.components.gating.retry_loop import RetryLoop as RetryLoop
    from adaptive_retrieval.components.gating.self_calibration import DEFAULT_L2 as DEFAULT_L2
    from adaptive_retrieval.components.gating.self_calibration import FITTED as FITTED
    from adaptive_retrieval.components.gating.self_calibration import fit_calibration as fit_calibration
    from adaptive_retrieval.components.gating.signals import SIGNALS as SIGNALS
    from adaptive_retrieval.components.gating.word_vectors import WordVectors as WordVectors

__getattr__, __dir__, __all__ = lazy_exports(__name__, _import_structure)
