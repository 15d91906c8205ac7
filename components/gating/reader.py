"""Optional readers for the quality gate: does a passage answer the question? One more signal, off by default.

The gate's own signals need no model beyond the shipped embedder. A reader adds a judgement that reads the
question against the top passages:

- :class:`ModelReader`: a local model from a folder (Hugging Face ``save_pretrained`` layout) loaded with
  ``transformers`` (the ``models`` extra): a **cross-encoder** (``kind="cross-encoder"``, a sequence classifier
  over (question, passage) pairs: sigmoid of a single logit, or the last class's softmax probability) or an
  **extractive QA** model (``kind="extractive"``: the probability that the best answer span beats the "no answer"
  position, ``sigmoid(best span score - null score)``). The score is the best over the passages.
- :class:`ChatReader`: any Haystack ``ChatGenerator`` (through its public ``run(messages=...)``), asked whether
  the numbered passages state the answer; "yes" is 1.0, "no" 0.0.

Both expose ``score(query, documents) -> float`` in [0, 1] and ``run`` (a Haystack component in a pipeline of its
own). The gate takes either, or a bare ChatGenerator, as ``reader=`` and vetoes a pass under
``reader_threshold``.

Usage::

    reader = ModelReader(model="models/my-cross-encoder", kind="cross-encoder")
    gate = QualityGate(reader=reader, reader_threshold=0.5)
    gate = QualityGate(reader=OpenAIChatGenerator(model="gpt-4o-mini"))   # wrapped in a ChatReader
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.core.serialization import component_to_dict
from haystack.dataclasses import ChatMessage
from haystack.lazy_imports import LazyImport
from haystack.utils import deserialize_chatgenerator_inplace

from adaptive_retrieval.components.extras import install_hint

logger = logging.getLogger(__name__)

KINDS: tuple[str, ...] = ("cross-encoder", "extractive")
_YES = re.compile(r"^\W*yes\b", re.IGNORECASE)
PROMPT = (
    "Question: {query}\n\nPassages:\n{passages}\n\nDoes one of these passages state the answer to the question? "
    "Answer with one word: yes or no."
)


@component
class ModelReader:
    """Scores (question, passage) pairs with a local cross-encoder or extractive QA model; the best passage's score.

    :param model: folder with the model and its tokenizer (``save_pretrained`` layout).
    :param kind: ``cross-encoder`` or ``extractive`` (see the module docstring).
    :param max_length: tokens per (question, passage) pair; longer passages are cut (the reader reads their head).
    :param device: ``cpu`` or ``cuda``.
    """

    def __init__(self, model: str, kind: str = "cross-encoder", max_length: int = 384, device: str = "cpu") -> None:
        if kind not in KINDS:
            msg = f"Unknown reader kind '{kind}'; choose one of {list(KINDS)}"
            raise ValueError(msg)
        self.model = model
        self.kind = kind
        self.max_length = max_length
        self.device = device
        self._tokenizer: Any = None
        self._model: Any = None

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, model=self.model, kind=self.kind, max_length=self.max_length, device=self.device)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelReader:
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """Load the tokenizer and the model from the folder.

        :raises FileNotFoundError: when the folder does not exist.
        :raises ImportError: without ``transformers`` (install the ``models`` extra).
        """
        if self._model is not None:
            return
        if not Path(self.model).is_dir():
            msg = f"Reader model folder {self.model} does not exist"
            raise FileNotFoundError(msg)
        # Imported here, not at the top: a gate without a reader must not load torch on the query path.
        with LazyImport(install_hint("models")) as transformers_import:
            from transformers import AutoModelForQuestionAnswering, AutoModelForSequenceClassification, AutoTokenizer
        transformers_import.check()
        loader = AutoModelForSequenceClassification if self.kind == "cross-encoder" else AutoModelForQuestionAnswering
        self._tokenizer = AutoTokenizer.from_pretrained(self.model)
        self._model = loader.from_pretrained(self.model).to(self.device).eval()
        logger.info("Gate reader: %s model from %s", self.kind, self.model)

    def passage_scores(self, query: str, documents: list[Document]) -> list[float]:
        """One score in [0, 1] per document (same order)."""
        with LazyImport(install_hint("models")) as torch_import:
            import torch
        torch_import.check()

        self.warm_up()
        texts = [d.content or "" for d in documents]
        if not texts:
            return []
        batch = self._tokenizer(
            [query] * len(texts),
            texts,
            truncation="only_second",
            max_length=self.max_length,
            padding=True,
            return_tensors="pt",
        ).to(self.device)
        with torch.inference_mode():
            out = self._model(**batch)
        if self.kind == "cross-encoder":
            logits = out.logits.float()
            probs = torch.sigmoid(logits[:, 0]) if logits.shape[1] == 1 else torch.softmax(logits, dim=1)[:, -1]
            return [float(p) for p in probs]
        return self._span_scores(out.start_logits.float(), out.end_logits.float(), batch)

    @staticmethod
    def _span_scores(start: Any, end: Any, batch: Any) -> list[float]:
        """sigmoid(best span in the passage - the null span at [CLS]) per row."""
        with LazyImport(install_hint("models")) as torch_import:
            import torch
        torch_import.check()

        passage = batch["attention_mask"].bool()
        if "token_type_ids" in batch:
            passage &= batch["token_type_ids"].bool()
        scores = []
        for row in range(start.shape[0]):
            mask = passage[row]
            if not mask.any():
                scores.append(0.0)
                continue
            s, e = start[row].masked_fill(~mask, -1e9), end[row].masked_fill(~mask, -1e9)
            span = s[:, None] + e[None, :]
            valid = torch.triu(torch.ones_like(span, dtype=torch.bool)) & ~torch.triu(
                torch.ones_like(span, dtype=torch.bool), diagonal=30
            )
            best = span.masked_fill(~valid, -1e9).max()
            scores.append(float(torch.sigmoid(best - (start[row, 0] + end[row, 0]))))
        return scores

    def score(self, query: str, documents: list[Document]) -> float:
        """The best passage's score (0.0 without documents)."""
        return max(self.passage_scores(query, documents), default=0.0)

    @component.output_types(score=float, scores=list[float])
    def run(self, query: str, documents: list[Document]) -> dict[str, Any]:
        """Score ``documents`` against ``query``: ``score`` (the best) and ``scores`` (per document)."""
        scores = self.passage_scores(query, documents)
        return {"score": max(scores, default=0.0), "scores": scores}


@component
class ChatReader:
    """Asks a Haystack ChatGenerator whether the passages state the answer: 1.0 for "yes", else 0.0.

    :param chat_generator: any Haystack ChatGenerator (a component with ``run(messages=...)``).
    :param max_chars: characters of each passage put in the prompt.
    """

    def __init__(self, chat_generator: Any, max_chars: int = 2000) -> None:
        if not callable(getattr(chat_generator, "run", None)):
            msg = "chat_generator must be a Haystack ChatGenerator (a component with run(messages=...))"
            raise TypeError(msg)
        self.chat_generator = chat_generator
        self.max_chars = max_chars

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self, chat_generator=component_to_dict(self.chat_generator, "chat_generator"), max_chars=self.max_chars
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChatReader:
        deserialize_chatgenerator_inplace(data["init_parameters"], key="chat_generator")
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        if hasattr(self.chat_generator, "warm_up"):
            self.chat_generator.warm_up()

    def score(self, query: str, documents: list[Document]) -> float:
        """1.0 when the generator answers "yes", 0.0 otherwise (and without documents).

        :raises ValueError: when the generator returns no reply (a failed call is not a "no").
        """
        if not documents:
            return 0.0
        passages = "\n".join(f"[{i}] {(d.content or '')[: self.max_chars]}" for i, d in enumerate(documents, 1))
        reply = self.chat_generator.run(messages=[ChatMessage.from_user(PROMPT.format(query=query, passages=passages))])
        replies = reply.get("replies") or []
        if not replies or replies[0].text is None:
            msg = f"The reader's chat generator returned no reply: {reply}"
            raise ValueError(msg)
        return 1.0 if _YES.match(replies[0].text) else 0.0

    @component.output_types(score=float)
    def run(self, query: str, documents: list[Document]) -> dict[str, Any]:
        return {"score": self.score(query, documents)}


def as_reader(reader: Any | None) -> Any | None:
    """``reader`` as the gate uses it: a reader as is, a ChatGenerator wrapped in a :class:`ChatReader`.

    :raises TypeError: for anything else.
    """
    if reader is None or callable(getattr(reader, "score", None)):
        return reader
    if callable(getattr(reader, "run", None)):
        return ChatReader(reader)
    msg = f"reader must be a ModelReader, a ChatReader or a Haystack ChatGenerator, got {type(reader).__name__}"
    raise TypeError(msg)


def reader_from_dict(data: dict[str, Any]) -> ModelReader | ChatReader:
    """A serialised reader: only this module's readers (a ChatReader's generator is deserialised through
    Haystack's allowlist).

    :raises ValueError: for any other type.
    """
    readers = {f"{__name__}.{kind.__name__}": kind for kind in (ModelReader, ChatReader)}
    kind = readers.get(str(data.get("type")))
    if kind is None:
        msg = f"A gate reader must be one of {sorted(readers)}, got {data.get('type')!r}"
        raise ValueError(msg)
    return kind.from_dict(data)
