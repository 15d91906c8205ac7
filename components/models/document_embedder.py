"""Embed documents with an exported ONNX model through ONNX Runtime, batched, with a progress bar."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from haystack import Document, component
from tqdm.auto import tqdm

from adaptive_retrieval.components.models.encoder import get_encoder
from adaptive_retrieval.components.models.paths import DEFAULT_MODEL
from adaptive_retrieval.components.models.token_encoder import TokenEncoder


@component
class OnnxDocumentEmbedder:
    """Computes a dense embedding for each document (content, optionally prefixed by meta fields).

    Usage::

        embedder = OnnxDocumentEmbedder(precision="int8", meta_fields_to_embed=["title"])
        embedder.warm_up()
        docs = embedder.run([Document(content="The while statement repeats a suite.")])["documents"]
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        precision: str | None = None,
        device: str | None = None,
        prefix: str = "",
        batch_size: int = 32,
        progress_bar: bool = True,
        meta_fields_to_embed: list[str] | None = None,
        embedding_separator: str = "\n",
    ) -> None:
        """
        :param model: model folder, or a name inside the models folder.
        :param precision: ``int8`` or ``fp32`` on CPU;
            ``None``: ``$ADAPTIVE_PRECISION``, else ``int8`` (read at warm-up).
        :param device: ``cpu`` or ``cuda``; ``None``: ``$ADAPTIVE_DEVICE``, else ``cpu``.
        :param prefix: text prepended to every passage.
        :param batch_size: passages per ONNX Runtime call.
        :param progress_bar: show a tqdm bar.
        :param meta_fields_to_embed: meta fields (e.g. ``title``, ``section_path``) embedded with the content.
        :param embedding_separator: separator between meta fields and content.
        """
        self.model = model
        self.precision = precision
        self.device = device
        self.prefix = prefix
        self.batch_size = batch_size
        self.progress_bar = progress_bar
        self.meta_fields_to_embed = meta_fields_to_embed or []
        self.embedding_separator = embedding_separator
        self._encoder: TokenEncoder | None = None

    def warm_up(self) -> None:
        """Load (or reuse) the ONNX session."""
        if self._encoder is None:
            self._encoder = get_encoder(self.model, self.precision, self.device)

    def _text(self, doc: Document) -> str:
        parts = []
        for field in self.meta_fields_to_embed:
            value = doc.meta.get(field)
            if value:
                parts.append(" > ".join(value) if isinstance(value, list) else str(value))
        parts.append(doc.content or "")
        return self.prefix + self.embedding_separator.join(parts)

    @component.output_types(documents=list[Document], meta=dict[str, Any])
    def run(self, documents: list[Document]) -> dict[str, Any]:
        """Return copies of ``documents`` with ``embedding`` set (the inputs are not modified)."""
        if not isinstance(documents, list) or (documents and not isinstance(documents[0], Document)):
            msg = "OnnxDocumentEmbedder expects a list of Documents; use OnnxTextEmbedder for a string."
            raise TypeError(msg)
        self.warm_up()
        assert self._encoder is not None
        texts = [self._text(d) for d in documents]
        with tqdm(total=len(texts), desc="dense embedding", unit="doc", disable=not self.progress_bar) as bar:
            vectors = self._encoder.encode(texts, batch_size=self.batch_size, progress=bar.update)
        out = [replace(doc, embedding=vec.tolist()) for doc, vec in zip(documents, vectors, strict=True)]
        return {
            "documents": out,
            "meta": {"model": str(self._encoder.model_dir), "precision": self._encoder.precision},
        }
