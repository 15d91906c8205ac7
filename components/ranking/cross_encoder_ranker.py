"""Cross-encoder reranking through ONNX Runtime from a local model folder (e.g. bge-reranker-v2-m3).

The folder holds ``tokenizer.json`` and ``model.onnx`` (fp32) and optionally ``model_int8.onnx``, the layout
:func:`export_cross_encoder` writes from a Hugging Face sequence-classification checkpoint with the same
per-channel, MatMul-only INT8 quantisation as the embedding models. Query and document are encoded as one
pair (``[CLS] query [SEP] document [SEP]`` or the model's own template) and the model's logit is the score.

Usage::

    export_cross_encoder("/models/hf/bge-reranker-v2-m3")      # once: -> models/bge-reranker-v2-m3/
    ranker = CrossEncoderRanker(model="bge-reranker-v2-m3", precision="int8")
    ranker.warm_up()
    ranked = ranker.run(documents=docs, query="What is MMR?", top_k=5)["documents"]
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
from haystack import component

from adaptive_retrieval.components import settings
from adaptive_retrieval.components.models.onnx_encoder import open_session
from adaptive_retrieval.components.models.paths import model_file, resolve_model_dir
from adaptive_retrieval.components.models.runtime import resolve_device, resolve_precision
from adaptive_retrieval.components.models.token_encoder import ONNX_PRECISIONS, TORCH_PRECISIONS
from adaptive_retrieval.components.ranking.base import RerankerBase, length_batches, relevance_logit
from adaptive_retrieval.components.ranking.torch_cross_encoder import TorchCrossEncoder
from adaptive_retrieval.components.shared_documents import RankedDocuments

logger = logging.getLogger(__name__)

#: What the PyTorch path offers a cross-encoder: not fp8, which does not pay (torch_runner.FP8_MEASURED).
TORCH_RERANK_PRECISIONS = ("fp16", "bf16")
#: RoBERTa-family models offset positions by the padding index, so two positions are not usable.
_POSITION_OFFSET = {"roberta": 2, "xlm-roberta": 2, "camembert": 2}


def export_cross_encoder(
    source: str | Path,
    models_dir: str | Path | None = None,
    name: str | None = None,
    precisions: Iterable[str] = ("fp32", "int8"),
    force: bool = False,
) -> Path:
    """Export a local sequence-classification checkpoint to ``models_dir/name/{model.onnx, model_int8.onnx}``.

    Thin wrapper over :func:`adaptive_retrieval.components.models.export.export_model` with the ``text-classification``
    task (imports torch; set-up time only).

    :param source: Hugging Face folder (``config.json``, weights, ``tokenizer.json``).
    :param name: sub-folder name; defaults to the source folder's name.
    :returns: the model folder.
    """
    from adaptive_retrieval.components.models.export import export_model

    source = Path(source)
    return export_model(
        source=source,
        models_dir=models_dir,
        name=name or source.name,
        precisions=precisions,
        force=force,
        task="text-classification",
    )


@component
class CrossEncoderRanker(RerankerBase):
    """Reranks documents with a cross-encoder ONNX model; pass-through when the router sets ``rerank=False``.

    :param model: model folder, or a name inside the models folder.
    :param precision: ``int8`` (``model_int8.onnx``) or ``fp32`` (``model.onnx``) on ONNX Runtime; ``fp16`` or
        ``bf16`` on a GPU through PyTorch (the weights the folder was exported from; only the scores leave the
        device: :mod:`.torch_cross_encoder`); ``None``: ``$ADAPTIVE_PRECISION``, else ``int8`` (read at warm-up).
    :param device: ``cpu`` or ``cuda`` (ONNX: needs onnxruntime-gpu); ``None``: ``$ADAPTIVE_DEVICE``, else ``cpu``.
    :param top_k: documents returned (the router's ``top_k`` overrides it per query; ``None`` keeps all).
    :param batch_size: query–document pairs per model call.
    :param max_length: tokens per pair (capped by the model's position table); longer pairs are truncated.
    :param meta_fields_to_embed: meta fields prepended to the content (e.g. ``title``).
    :param scale_score: map logits to (0, 1) with a sigmoid (the models' own convention for relevance).
    :param share_documents: send ``documents`` as one shared, read-only ``SharedDocuments`` (Haystack copies it
        once, not document by document).
    """

    kind = "cross_encoder"

    def __init__(
        self,
        model: str,
        precision: str | None = None,
        device: str | None = None,
        top_k: int | None = None,
        batch_size: int = 16,
        max_length: int = 512,
        meta_fields_to_embed: list[str] | None = None,
        scale_score: bool = True,
        share_documents: bool = False,
    ) -> None:
        fields = ["title"] if meta_fields_to_embed is None else meta_fields_to_embed
        RerankerBase.__init__(self, top_k, batch_size, fields, share_documents)
        if precision is not None and precision not in (*ONNX_PRECISIONS, *TORCH_RERANK_PRECISIONS):
            msg = (
                f"Unknown precision '{precision}' for a cross-encoder; choose 'fp32' or 'int8' "
                "(or 'fp16'/'bf16' on a GPU)."
            )
            raise ValueError(msg)
        if max_length < 8:
            msg = f"max_length must be >= 8, got {max_length}"
            raise ValueError(msg)
        self.model = model
        self.precision = precision
        self.device = device
        self.max_length = max_length
        self.scale_score = scale_score
        self._session: Any = None
        self._torch: TorchCrossEncoder | None = None
        self._tokenizer: Any = None
        self._input_names: set[str] = set()

    def _limit(self, model_dir: Path) -> int:
        config_path = model_dir / "config.json"
        if not config_path.exists():
            return self.max_length
        config = json.loads(config_path.read_text(encoding="utf-8"))
        positions = config.get("max_position_embeddings")
        if not positions:
            return self.max_length
        return min(self.max_length, int(positions) - _POSITION_OFFSET.get(config.get("model_type", ""), 0))

    def warm_up(self) -> None:
        """Load the tokenizer and the ONNX session.

        :raises FileNotFoundError: when the folder, its ``tokenizer.json`` or the ONNX file is missing.
        """
        if self._session is not None or self._torch is not None:
            return
        from tokenizers import Tokenizer

        from adaptive_retrieval.components.models.ort_runtime import onnxruntime_quiet

        ort = onnxruntime_quiet()

        model_dir = resolve_model_dir(self.model)
        precision, device = resolve_precision(self.precision), resolve_device(self.device)
        if precision not in TORCH_PRECISIONS:
            path = model_file(model_dir, precision)  # the missing-file error before the tokenizer's
        tokenizer_path = model_dir / "tokenizer.json"
        if not tokenizer_path.exists():
            msg = f"'{model_dir}' has no tokenizer.json; save the tokenizer with the model (a fast tokenizer)."
            raise FileNotFoundError(msg)
        tokenizer = Tokenizer.from_file(str(tokenizer_path))
        limit = self._limit(model_dir)
        tokenizer.enable_truncation(max_length=limit)
        pad_token = next((t for t in ("[PAD]", "<pad>") if tokenizer.token_to_id(t) is not None), None)
        pad_id = tokenizer.token_to_id(pad_token) if pad_token else 0
        if precision in TORCH_PRECISIONS:
            if device != "cuda":
                msg = f"precision '{precision}' needs a GPU (device='cuda'); on CPU choose 'fp32' or 'int8'."
                raise ValueError(msg)
            tokenizer.no_padding()  # the PyTorch path pads each length bucket itself
            self._torch = TorchCrossEncoder(model_dir, tokenizer, pad_id, precision, device, limit)
            self._tokenizer = tokenizer
            logger.info("Loaded cross-encoder %s (%s, %s, PyTorch)", model_dir, precision, device)
            return
        tokenizer.enable_padding(pad_id=pad_id, pad_token=pad_token or "[PAD]")
        options = ort.SessionOptions()
        threads = settings.whole("ADAPTIVE_ORT_THREADS")
        if threads:
            options.intra_op_num_threads = threads
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        session = open_session(path, options, device)
        labels = session.get_outputs()[0].shape[-1]
        if isinstance(labels, int) and labels > 2:
            msg = f"'{path}' outputs {labels} labels; a cross-encoder reranker needs 1 (relevance) or 2 (no/yes)."
            raise ValueError(msg)
        self._input_names = {i.name for i in session.get_inputs()}
        self._tokenizer = tokenizer
        self._session = session
        logger.info("Loaded cross-encoder %s (%s, %s)", path, precision, device)

    def _logits(self, query: str, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch([(query, t) for t in texts])
        feeds = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
        }
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
        logits = np.asarray(self._session.run(None, feeds)[0], dtype=np.float32)
        # One logit is the relevance; with two (not relevant / relevant) their difference is the log-odds.
        return relevance_logit(logits)

    def score(self, query: str, texts: list[str]) -> np.ndarray:
        """Relevance of each text to ``query``, pairs scored in length-sorted batches of ``batch_size``."""
        self.warm_up()
        if self._torch is not None:
            scores = self._torch.relevance(query, texts, self.batch_size)
        else:
            scores = np.empty(len(texts), dtype=np.float32)
            for idx in length_batches(texts, self.batch_size):
                scores[idx] = self._logits(query, [texts[i] for i in idx])
        if self.scale_score:
            scores = 1.0 / (1.0 + np.exp(-scores))
        return scores

    def run(
        self,
        documents: RankedDocuments,
        query: str,
        top_k: int | None = None,
        rerank: bool | None = None,
    ) -> dict[str, Any]:
        """Rerank ``documents`` for ``query``; pass them through when the router sets ``rerank=False``.

        :param documents: candidates (e.g. the MMR selection).
        :param query: the question.
        :param top_k: documents to return (default: the init ``top_k``).
        :param rerank: the router's per-intent decision; ``None`` (not connected) reranks.
        :returns: ``documents`` sorted by cross-encoder score.
        """
        return self.rerank(documents, query, top_k, rerank)
