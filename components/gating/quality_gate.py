"""Quality gate: decide whether the retrieved evidence is good enough, worth a broader retry, or insufficient.

The gate turns the signals of :mod:`adaptive_retrieval.components.gating.signals` into one quality score with a logistic
model, ``quality = sigmoid(bias + Σ w_s · signal_s)``, whose weights and threshold are fitted on data by
``scripts/lab/calibrate_gate.py`` (answerable questions against the same questions with their supporting passages
removed from the index). Two checks can hold a pass back whatever the quality: ``asked`` (whether the passages
hold what the question asks for, :mod:`~adaptive_retrieval.components.gating.answerability`) under
``asked_threshold``, and an optional reader's score (:mod:`~adaptive_retrieval.components.gating.reader`) under
``reader_threshold``; the quality is then brought under ``pass_threshold`` (still ordered). Then:

- ``quality >= pass_threshold`` → **pass**: the documents go out;
- below it with retries left → **retry**: the ``retry`` output sends the query back around the pipeline loop
  (through :class:`~adaptive_retrieval.components.gating.retry_loop.RetryLoop` to the router, which widens the
  strategy);
- below it with no retry left → **insufficient**: the best attempt's documents go out, flagged.

Each attempt's documents, quality and signals travel with the retry, so the final output carries the decision,
the signals, the attempt that produced the documents and the history of every attempt. The loop is bounded by
``max_retries``. A retry whose escalated strategy (from the router's ``next_strategy``) would fetch the same
candidates as this attempt is skipped: the decision is **insufficient** with ``retry_skipped: "same strategy"``.

**Self-calibration.** The defaults are the shipped prior, ``data/gate_prior.json`` (weights fitted on
hotpotqa100, ``asked_threshold`` set on dragonball_law_en; each with its provenance). ``adaptive-retrieval
calibrate`` fits the same model on pseudo-queries drawn from the user's own index (no labels needed, see
:mod:`adaptive_retrieval.pipelines.gate_calibration`) and writes ``gate_calibration.json`` into the store folder;
given the ``document_store`` (or a ``calibration_path``), the gate reads that file at ``warm_up`` and again
whenever it changes, and reports which model decided (``calibration``: ``index`` or ``prior``).

Usage::

    gate = QualityGate(max_retries=1)
    out = gate.run(documents=docs, query="Who founded X?", query_embedding=vector, fusion=fusion)
    out["decision"], out["quality"], out["signals"]   # 'pass', 0.83, {'top_score': 0.71, ...}
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.core.serialization import component_to_dict, import_class_by_name

from adaptive_retrieval.components.blas_threads import one_blas_thread
from adaptive_retrieval.components.frozen_mapping import FrozenMapping
from adaptive_retrieval.components.gating.answerability import asked_coverage, missing_asked
from adaptive_retrieval.components.gating.attempts import Attempt, AttemptRecord, RetryState, best_attempt, history_of
from adaptive_retrieval.components.gating.calibration import load_prior, store_calibration_file
from adaptive_retrieval.components.gating.gate_model import CalibrationWatcher, GateModel
from adaptive_retrieval.components.gating.reader import as_reader, reader_from_dict
from adaptive_retrieval.components.gating.retry_policy import same_candidates
from adaptive_retrieval.components.gating.signals import SIGNALS, gate_signals, missing_names
from adaptive_retrieval.components.gating.verdict import Verdict, verdict
from adaptive_retrieval.components.gating.word_vectors import WordVectors
from adaptive_retrieval.components.models.paths import DEFAULT_MODEL
from adaptive_retrieval.components.models.query_vector import QueryEmbedding, as_float_list
from adaptive_retrieval.components.shared_documents import RankedDocuments, documents_type, hand_on
from adaptive_retrieval.components.strategy import Strategy
from adaptive_retrieval.components.text.names import query_names

logger = logging.getLogger(__name__)

DECISIONS: tuple[str, ...] = ("pass", "retry", "insufficient")

#: The shipped prior (``data/gate_prior.json``, with its provenance): logistic weights, bias and thresholds fitted
#: by ``scripts/lab/calibrate_gate.py``; the gate's defaults until an index has its own calibration.
PRIOR: dict[str, Any] = load_prior()
DEFAULT_WEIGHTS: dict[str, float] = dict(PRIOR["weights"])
DEFAULT_BIAS: float = PRIOR["bias"]
DEFAULT_PASS_THRESHOLD: float = PRIOR["pass_threshold"]
DEFAULT_ASKED_THRESHOLD: float = PRIOR["asked_threshold"]
DEFAULT_ASKED_FLOOR: float = PRIOR["asked_floor"]


#: The type of the gate's ``fusion`` input: the joiner's diagnostics, read-only when the joiner shares its documents.
FusionInput = FrozenMapping[Any] | dict[str, Any] | None

#: The gate's outputs but ``documents`` (whose type is ``share_documents``'s: set in ``__init__``).
_OUTPUT_TYPES: dict[str, Any] = {
    "decision": str,
    "quality": float,
    "signals": dict[str, float],
    "attempt": int,
    "attempts": list[AttemptRecord],
    "retry": RetryState,
    "retry_skipped": str,
    "calibration": str,
    "pass_threshold": float,
    "verdict": str,
    "reason": str,
}


@component
class QualityGate:
    """Pass / retry / insufficient decision on a retrieved list, driving the pipeline's corrective loop.

    :param max_retries: retries allowed after the first attempt (0 disables the loop).
    :param signal_k: top documents the signals look at.
    :param weights: logistic weight of each signal (``top_score``, ``margin``, ``coverage``, ``agreement``,
        ``redundancy``, ``names``, ``names_title``, ``asked``); signals left out weigh 0. ``None``: the shipped
        prior (``data/gate_prior.json``).
    :param bias: logistic intercept (``None``: the prior's).
    :param pass_threshold: quality in (0, 1) at or above which the documents pass (``None``: the prior's).
    :param asked_threshold: the ``asked`` signal (does one passage hold what the question asks for) below which
        the gate does not pass, whatever the quality (0 turns the check off; ``None``: the prior's).
    :param asked_floor: word similarity at which a soft match of an asked word starts to count (1.0: stems
        only; ``None``: the prior's; an index's self-calibration sets its own).
    :param soft_match: match asked words softly with the shipped encoder's word vectors
        (:class:`~adaptive_retrieval.components.gating.word_vectors.WordVectors`, loaded at ``warm_up``);
        ``False``: stems only, no model.
    :param model: the ONNX model folder or name whose word vectors ``soft_match`` uses (default: the shipped
        all-MiniLM-L6-v2); the CLI's and ``load_pipeline``'s ``model`` override sets it with the embedders'.
    :param document_store: the index's store; its folder (``path`` init parameter) holds the self-calibration
        ``gate_calibration.json`` (never opened otherwise).
    :param calibration_path: an explicit calibration file (overrides the store's folder).
    :param use_calibration: ``False`` keeps the init weights even when a calibration file exists.
    :param skip_same_retries: skip a retry whose strategy would fetch the same candidates (``False``: always
        retry up to ``max_retries``).
    :param share_documents: send ``documents`` as one shared, read-only ``SharedDocuments`` (the query pipeline's
        setting: Haystack copies it once, not document by document, on its way to the answer component).
    :param reader: optional reader consulted as one more signal (``reader``, in [0, 1]): a
        :class:`~adaptive_retrieval.components.gating.reader.ModelReader` (a local cross-encoder or extractive QA
        model from a folder), a :class:`~adaptive_retrieval.components.gating.reader.ChatReader`, or any Haystack
        ChatGenerator (wrapped in a ``ChatReader``). Off by default: the gate needs no model beyond the signals.
    :param reader_threshold: the reader's score below which the gate does not pass.

    weights/bias/thresholds are the prior: they decide until the index has a calibration file.
    """

    def __init__(
        self,
        max_retries: int = 1,
        signal_k: int = 5,
        weights: dict[str, float] | None = None,
        bias: float | None = None,
        pass_threshold: float | None = None,
        asked_threshold: float | None = None,
        asked_floor: float | None = None,
        document_store: Any | None = None,
        calibration_path: str | None = None,
        use_calibration: bool = True,
        skip_same_retries: bool = True,
        reader: Any | None = None,
        reader_threshold: float = 0.5,
        soft_match: bool = True,
        model: str = DEFAULT_MODEL,
        share_documents: bool = False,
    ) -> None:
        if max_retries < 0:
            msg = f"max_retries must be >= 0, got {max_retries}"
            raise ValueError(msg)
        if signal_k < 1:
            msg = f"signal_k must be >= 1, got {signal_k}"
            raise ValueError(msg)
        given = {
            "weights": weights,
            "bias": bias,
            "pass_threshold": pass_threshold,
            "asked_threshold": asked_threshold,
            "asked_floor": asked_floor,
        }
        fitted = {k: PRIOR[k] if v is None else v for k, v in given.items()}
        unknown = sorted(set(fitted["weights"]) - set(SIGNALS))
        if unknown:
            msg = f"Unknown signal(s) {unknown} in weights; the gate's signals are {list(SIGNALS)}"
            raise ValueError(msg)
        if not 0.0 < fitted["pass_threshold"] < 1.0:
            msg = f"pass_threshold must be within (0, 1), got {fitted['pass_threshold']}"
            raise ValueError(msg)
        cuts = (
            ("asked_threshold", fitted["asked_threshold"]),
            ("asked_floor", fitted["asked_floor"]),
            ("reader_threshold", reader_threshold),
        )
        for name, cut in cuts:
            if not 0.0 <= cut <= 1.0:
                msg = f"{name} must be within [0, 1], got {cut}"
                raise ValueError(msg)
        self.max_retries = max_retries
        self.signal_k = signal_k
        self._given = given  # what to_dict writes: None stays None (the prior file decides)
        self.soft_match = soft_match
        self.model = model
        self._vectors = WordVectors(model) if soft_match else None
        self.document_store = document_store
        self.calibration_path = calibration_path
        self.use_calibration = use_calibration
        self.skip_same_retries = skip_same_retries
        self.reader = as_reader(reader)
        self.reader_threshold = reader_threshold
        self.prior = {**fitted, "weights": dict(fitted["weights"])}
        self._watcher = CalibrationWatcher(GateModel.from_fitted(self.prior))
        self.share_documents = share_documents
        component.set_output_types(self, documents=documents_type(share_documents), **_OUTPUT_TYPES)

    # -- the scoring model: the prior, or the index's calibration (gate_model.py) --------------------------------

    @property
    def scoring(self) -> GateModel:
        """The model the gate judges with now (the prior, or the index's calibration once read)."""
        return self._watcher.model

    @property
    def calibration(self) -> str:
        """Which model judges: ``index`` (the index's calibration file) or ``prior``."""
        return self.scoring.source

    def _set_prior(self, **fields: Any) -> None:
        # Setting a field (calibration scripts do) changes the prior, and the model while no calibration is read.
        self.prior = {**self.prior, **fields}
        self._watcher.replace_prior(GateModel.from_fitted(self.prior))

    weights = property(lambda self: dict(self.scoring.weights), lambda self, v: self._set_prior(weights=dict(v)))
    bias = property(lambda self: self.scoring.bias, lambda self, v: self._set_prior(bias=float(v)))
    pass_threshold = property(
        lambda self: self.scoring.pass_threshold, lambda self, v: self._set_prior(pass_threshold=float(v))
    )
    asked_threshold = property(
        lambda self: self.scoring.asked_threshold, lambda self, v: self._set_prior(asked_threshold=float(v))
    )
    asked_floor = property(lambda self: self.scoring.asked_floor, lambda self, v: self._set_prior(asked_floor=float(v)))

    def to_dict(self) -> dict[str, Any]:
        """Serialise with the prior's parameters as given (``None``: the shipped prior file), the store's and the
        reader's own dictionaries."""
        return default_to_dict(
            self,
            max_retries=self.max_retries,
            signal_k=self.signal_k,
            **self._given,
            document_store=self.document_store.to_dict() if self.document_store is not None else None,
            calibration_path=self.calibration_path,
            use_calibration=self.use_calibration,
            skip_same_retries=self.skip_same_retries,
            reader=component_to_dict(self.reader, "reader") if self.reader is not None else None,
            reader_threshold=self.reader_threshold,
            soft_match=self.soft_match,
            model=self.model,
            share_documents=self.share_documents,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QualityGate:
        """Deserialise, rebuilding the document store and the reader with the classes their ``type`` names."""
        params = data.get("init_parameters", {})
        store = params.get("document_store")
        if isinstance(store, dict):
            params["document_store"] = import_class_by_name(store["type"]).from_dict(store)  # type: ignore[attr-defined]
        reader = params.get("reader")
        if isinstance(reader, dict):
            params["reader"] = reader_from_dict(reader)
        return default_from_dict(cls, data)

    @property
    def word_vectors(self) -> WordVectors | None:
        """The word vectors of the ``asked`` signal's soft matches (``None`` with ``soft_match=False``)."""
        return self._vectors

    def calibration_file(self) -> Path | None:
        """The calibration file this gate reads: ``calibration_path``, else the store folder's, else none."""
        if self.calibration_path:
            return Path(self.calibration_path)
        return store_calibration_file(self.document_store)

    def warm_up(self) -> None:
        """Pick up the index's self-calibration, if there is one, and load the word vectors and the reader's
        model."""
        self._refresh_calibration()
        if self._vectors is not None:
            self._vectors.warm_up()
        if self.reader is not None and hasattr(self.reader, "warm_up"):
            self.reader.warm_up()

    def _refresh_calibration(self) -> GateModel:
        """The model to judge this query with: the calibration file when it appeared or changed since the last look
        (one ``stat`` per query), the prior when it disappeared."""
        return self._watcher.current(self.calibration_file() if self.use_calibration else None)

    def signals(
        self,
        documents: list[Document],
        query: str,
        query_embedding: list[float] | None = None,
        fusion: FusionInput = None,
        scoring: GateModel | None = None,
    ) -> dict[str, float]:
        """The gate's signals for a list, with agreement counted over the channels that delivered (the asked
        check's floor and threshold from ``scoring``, default the current model)."""
        scoring = scoring or self.scoring
        channels = None
        if fusion and fusion.get("weights"):
            # A channel that found nothing (e.g. an empty graph) can neither agree nor disagree.
            sizes = fusion.get("sizes", {})
            channels = [c for c in fusion["weights"] if sizes.get(c, 1) > 0]
        floor, cut = scoring.asked_floor, scoring.asked_threshold
        vectors = self._vectors if floor < 1.0 and cut > 0 else None
        signals = gate_signals(documents, query, query_embedding, channels, self.signal_k, vectors, floor, cut)
        if self.reader is not None:
            signals["reader"] = self.reader.score(query, list(documents[: self.signal_k]))
        return signals

    def quality(self, signals: dict[str, float], scoring: GateModel | None = None) -> float:
        """The quality score in (0, 1) of a set of signals (:meth:`GateModel.quality
        <adaptive_retrieval.components.gating.gate_model.GateModel.quality>`, with the reader's threshold)."""
        return (scoring or self.scoring).quality(signals, self.reader_threshold)

    def _decide(
        self,
        quality: float,
        attempt: int,
        fusion: FusionInput,
        strategy: Strategy | None,
        next_strategy: Strategy | None,
        pass_threshold: float,
    ) -> tuple[str, str | None]:
        """``pass`` / ``retry`` / ``insufficient`` for one attempt, and why a retry was skipped (or ``None``)."""
        if quality >= pass_threshold:
            return "pass", None
        if attempt >= self.max_retries:
            return "insufficient", None
        known = set((fusion or {}).get("weights") or {}) | set((fusion or {}).get("skipped") or [])
        if self.skip_same_retries and same_candidates(
            strategy, next_strategy, (fusion or {}).get("sizes"), known or None
        ):
            logger.info("Quality gate: retry skipped, the escalated strategy would fetch the same candidates")
            return "insufficient", "same strategy"
        return "retry", None

    def run(
        self,
        documents: RankedDocuments,
        query: str,
        query_embedding: QueryEmbedding | None = None,
        fusion: FusionInput = None,
        attempt: int | None = None,
        previous: RetryState | None = None,
        strategy: Strategy | None = None,
        next_strategy: Strategy | None = None,
    ) -> dict[str, Any]:
        """Judge one attempt.

        :param documents: the attempt's final list (after MMR and reranking).
        :param query: the question.
        :param query_embedding: the query vector (for the similarity signals).
        :param fusion: the joiner's diagnostics: the channels with a weight (``weights``) that returned documents
            (``sizes``) are the ones agreement counts.
        :param attempt: 0 for the first attempt, n for the n-th retry (from ``RetryLoop``).
        :param previous: what the loop carried from the earlier attempts (the best one and every record), from
            ``RetryLoop``.
        :param strategy: this attempt's strategy (the router's ``strategy``).
        :param next_strategy: the strategy a retry would use (the router's ``next_strategy``); a retry that
            would fetch the same candidates (:func:`same_candidates`) is skipped.
        :returns: on a retry only ``retry`` (a :class:`RetryState`: the next attempt's number, the best attempt so
            far, every record); otherwise ``documents``, ``decision`` (``pass`` or ``insufficient``), ``quality``,
            ``signals`` and ``attempt`` of the attempt whose documents are returned, ``attempts`` (every attempt's
            :class:`AttemptRecord`), ``calibration`` (``index`` or ``prior``) and its ``pass_threshold``,
            ``verdict`` (``found``, ``not_found`` or ``uncertain``) with its one-sentence ``reason``
            (:meth:`explain`) and, when a retry was skipped, ``retry_skipped`` (why).
        """
        query_embedding = as_float_list(query_embedding)
        scoring = self._refresh_calibration()  # one model for the whole judgement, even if the file changes now
        attempt = attempt or 0
        if attempt < 0:
            msg = f"attempt must be >= 0, got {attempt}"
            raise ValueError(msg)
        with one_blas_thread():
            signals = self.signals(documents, query, query_embedding, fusion, scoring)
        quality = self.quality(signals, scoring)
        decision, skipped = self._decide(quality, attempt, fusion, strategy, next_strategy, scoring.pass_threshold)
        rounded = {k: round(v, 4) for k, v in signals.items()}
        record = AttemptRecord(attempt, decision, round(quality, 4), rounded, len(documents), skipped)
        history = history_of(previous, record)
        best = best_attempt(Attempt(attempt, documents, quality, signals), previous)
        logger.debug("Quality gate: attempt %d quality %.3f -> %s", attempt, quality, decision)
        if decision == "retry":
            return {"retry": RetryState(attempt + 1, best, history)}
        if decision == "insufficient" and best.attempt != attempt:
            logger.info("No attempt passed; returning attempt %d, the best (quality %.3f)", best.attempt, best.quality)
        out = {
            "documents": hand_on(best.documents, self.share_documents),
            "decision": decision,
            "quality": round(best.quality, 4),
            "signals": {k: round(v, 4) for k, v in best.signals.items()},
            "attempt": best.attempt,
            "attempts": list(history),
            "calibration": scoring.source,
            "pass_threshold": round(scoring.pass_threshold, 4),
        }
        told = self.explain(best.documents, query, decision, best.quality, scoring)
        out["verdict"], out["reason"] = told.verdict, told.reason
        if skipped:
            out["retry_skipped"] = skipped
        return out

    def explain(
        self, documents: list[Document], query: str, decision: str, quality: float, scoring: GateModel | None = None
    ) -> Verdict:
        """The verdict a person reads (:func:`~adaptive_retrieval.components.gating.verdict.verdict`): found /
        not found / uncertain and why, naming the question's names and asked words that no passage holds."""
        scoring = scoring or self.scoring
        names = missing_names(documents, query) if decision != "pass" else []
        asked: list[str] = []
        held_asked = False
        if decision != "pass" and not names and scoring.asked_threshold > 0:
            # Named as missing only when the asked check is what held the list back: otherwise the evidence as a
            # whole was weak (uncertain), and words a passage lacks are not the reason.
            names_of = query_names(query)
            vectors = self._vectors if scoring.asked_floor < 1.0 else None
            held = asked_coverage(documents, query, names_of, vectors, scoring.asked_floor, scoring.asked_threshold)
            if held < scoring.asked_threshold:
                asked = missing_asked(documents, query, names_of, vectors, scoring.asked_floor)
            held_asked = held >= scoring.asked_threshold
        top = documents[0].meta if documents else {}
        where = top.get("section") or top.get("title") or top.get("source")
        return verdict(
            decision,
            quality,
            scoring.pass_threshold,
            missing_names=names,
            missing_asked=asked,
            top=str(where) if where else None,
            calibration=scoring.source,
            documents=len(documents),
            asked_held=held_asked,
        )
