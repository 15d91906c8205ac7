"""Encoder benchmark on one device: every back end and precision of the package against sentence-transformers and
against the model's own bare forward, in one run, for all-MiniLM-L6-v2 and a BERT-large shape.

    python scripts/lab/bench_gpu.py [--device cuda|cpu] [--passages 16384] [--batch-size 256] [--large 24x1024]
                                [--model DIR] [--reference FILE] [--compiled] [--json OUT.json]

Rows (each encodes the same passages with the same batch size, after a warm-up batch; they take turns, ``--rounds``
times, and the best round counts, so that a change in the machine's load falls on all of them):

- ``package <backend> <precision>``: the encoder the components get from ``get_encoder`` (``TorchEncoder``,
  ``OnnxEncoder``): pooling and L2 norm on the device, only ``[batch, dim]`` to the host, batches by token length,
  the next batch prepared while the device runs. ``fp8`` runs as fp16 unless ``--compiled`` (the row says so).
- ``old torch path``: the same PyTorch model through the host path it replaced (``[batch, tokens, dim]`` float32 to
  the host, pooling in numpy, batches by characters): the before of issue 43.
- ``sentence-transformers``: ``SentenceTransformer`` on the same weights, same precision, same batch size.
- ``bare forward + device pooling``: the model alone on batches tokenised beforehand, pooling on the device,
  nothing copied back until the end: the limit the package is measured against.
- with ``--compiled``: ``torch.compile`` static-shape fp16 and fp8 (torchao), the only way fp8 is offered; it is
  kept only where it is >= 1.3x compiled fp16 in this run.
- ONNX Runtime with the CUDA execution provider and IO binding (fp32 / int8 / fp16 graphs) where onnxruntime-gpu
  is installed; otherwise the row says why it is skipped.

Columns: passages/s; 1-query ms (median of single-query encodes, end to end: tokenise, run, copy back); cosine to
the reference (mean, min) and top-10 overlap (each query's 10 nearest passages, against the reference's). The
reference is CPU fp32 ONNX (the package's own fp32 graph on ONNX Runtime's CPU provider), read from
``--reference`` (``scripts/lab/gpu_carry_bundle.py`` writes it, with the weights as fp16 safetensors) or computed
here on the CPU before the timed runs. The BERT-large shape has random weights: throughput only.

After the table the targets of issue 43 (for an H100/H200, MiniLM, batch 256) are checked against this run's
figures; on ``--device cpu`` they are printed with the CPU ratios but do not apply (a CPU run is the smoke test and
the only measurement possible without a GPU).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from adaptive_retrieval.components.models import DEFAULT_MODEL, TokenEncoder, get_encoder, resolve_model_dir

logger = logging.getLogger("bench_gpu")

#: Targets of issue 43 (H100/H200, MiniLM, batch 256): (name, what is compared, bound, higher is better).
TARGETS = (
    ("fp16 vs bare forward with device pooling", ">= 0.9x"),
    ("fp16 vs sentence-transformers", ">= 2.5x"),
    ("fp16 1-query latency", "<= 3 ms"),
    ("fp16 top-10 overlap", ">= 0.99"),
    ("bf16 top-10 overlap", ">= 0.99"),
    ("fp8 (compiled) vs fp16 (compiled)", ">= 1.3x, else fp8 not offered as a speed option"),
)


@dataclass
class Row:
    """One measured configuration."""

    model: str
    name: str
    passages_per_s: float | None = None
    query_ms: float | None = None
    cos_mean: float | None = None
    cos_min: float | None = None
    top10: float | None = None
    note: str = ""
    vectors: Any = field(default=None, repr=False)


def passages(n: int) -> list[str]:
    """``n`` deterministic passages of 40 to 160 words from Python's own help topics (in every Python)."""
    from pydoc_data.topics import topics

    words = " ".join(topics[k] for k in sorted(topics)).split()
    return [" ".join(words[(i * 97) % (len(words) - 200) :][: 40 + (i % 5) * 30]) for i in range(n)]


def queries(n: int) -> list[str]:
    """``n`` deterministic short queries (5 to 12 words) from the same text, not copies of passages."""
    from pydoc_data.topics import topics

    words = " ".join(topics[k] for k in sorted(topics)).split()
    return [" ".join(words[(i * 7919 + 13) % (len(words) - 20) :][: 5 + (i % 8)]) for i in range(n)]


def texts_digest(texts: Sequence[str]) -> str:
    return hashlib.sha256("\x00".join(texts).encode("utf-8")).hexdigest()[:16]


def top_k(query_vectors: np.ndarray, passage_vectors: np.ndarray, k: int = 10) -> np.ndarray:
    """Indices of each query's ``k`` nearest passages (cosine of unit vectors), ``[queries, k]``."""
    sims = query_vectors.astype(np.float32) @ passage_vectors.astype(np.float32).T
    part = np.argpartition(-sims, k, axis=1)[:, :k]
    return part


def overlap(a: np.ndarray, b: np.ndarray) -> float:
    """Mean share of common ids between the rows of two ``[queries, k]`` id arrays."""
    return float(np.mean([len(set(x) & set(y)) / len(x) for x, y in zip(a, b, strict=True)]))


@dataclass
class Reference:
    """CPU fp32 ONNX vectors of the passages (stored float16) and each query's top-10 (computed in fp32)."""

    digest: str
    passages: np.ndarray
    top10: np.ndarray

    def save(self, path: Path) -> None:
        np.savez_compressed(path, digest=self.digest, passages=self.passages.astype(np.float16), top10=self.top10)

    @classmethod
    def load(cls, path: Path) -> Reference:
        data = np.load(path, allow_pickle=False)
        return cls(str(data["digest"]), data["passages"].astype(np.float32), data["top10"])


def compute_reference(model: str, texts: list[str], qs: list[str], batch_size: int) -> Reference:
    """The reference on the CPU: the package's fp32 ONNX graph on ONNX Runtime's CPU provider."""
    encoder = get_encoder(model, "fp32", "cpu", backend="onnx")
    logger.info("Reference: %d passages with ONNX fp32 on the CPU", len(texts))
    vectors = encoder.encode(texts, batch_size=batch_size)
    query_vectors = encoder.encode(qs, batch_size=batch_size)
    return Reference(texts_digest(texts + qs), vectors, top_k(query_vectors, vectors).astype(np.int32))


def sync(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def measure(
    rows: list[Row],
    encoders: list[Callable[[list[str]], np.ndarray]],
    texts: list[str],
    qs: list[str],
    device: str,
    batch_size: int,
    reference: Reference | None,
    rounds: int,
    query_runs: int,
) -> None:
    """Fill ``rows``: throughput over ``texts`` (the best of ``rounds``, the rows taking turns so that a change in
    the machine's load falls on all of them), median single-query latency (taking turns too), accuracy."""
    for encode in encoders:
        encode(texts[:batch_size])  # warm-up: kernels, allocator, autotuning
        encode(qs[:1])
    sync(device)
    best = [0.0] * len(rows)
    for _ in range(rounds):
        for i, encode in enumerate(encoders):
            start = time.perf_counter()
            vectors = encode(texts)
            sync(device)
            best[i] = max(best[i], len(texts) / (time.perf_counter() - start))
            rows[i].vectors = vectors
    times: list[list[float]] = [[] for _ in rows]
    for q in qs[:query_runs]:
        for i, encode in enumerate(encoders):
            start = time.perf_counter()
            encode([q])
            sync(device)
            times[i].append(time.perf_counter() - start)
    for i, (row, encode) in enumerate(zip(rows, encoders, strict=True)):
        row.passages_per_s, row.query_ms = best[i], 1000 * statistics.median(times[i])
        if reference is not None:
            cos = (reference.passages * row.vectors).sum(axis=1)
            row.cos_mean, row.cos_min = float(cos.mean()), float(cos.min())
            row.top10 = overlap(top_k(encode(qs), row.vectors), reference.top10)


def bare_forward(encoder: Any, batch_size: int) -> Callable[[list[str]], np.ndarray]:
    """The model alone: batches tokenised beforehand (same tokenisation and batching as the package), forward,
    pooling and norm on the device, one copy to the host at the end."""
    import torch

    from adaptive_retrieval.components.models import normalise, pool, token_length_batches

    runner = encoder.runner

    def encode(texts: list[str]) -> np.ndarray:
        planned = list(token_length_batches(texts, encoder.tokenizer.encode_batch, batch_size, encoder._pad_id))
        hosts = [runner._host_inputs(b)[1] for b in planned]  # tokenised and pinned before the clock matters
        order = np.concatenate([b.rows for b in planned])
        out = torch.empty((len(texts), encoder.dimension), device=runner.device)
        done = 0
        with torch.inference_mode():
            for batch, host in zip(planned, hosts, strict=True):
                output, mask = runner.forward(host)
                out[done : done + batch.real] = normalise(pool(output.last_hidden_state, mask, encoder.pooling))
                done += batch.real
        result = np.empty((len(texts), encoder.dimension), dtype=np.float32)
        result[order] = out.cpu().numpy()
        return result

    return encode


def sentence_transformers_encode(folder: Path, device: str, precision: str, batch_size: int) -> Callable:
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(folder), device=device, local_files_only=True)
    if precision == "fp16":
        model = model.half()
    elif precision == "bf16":
        model = model.to(torch.bfloat16)

    def encode(texts: list[str]) -> np.ndarray:
        vectors = model.encode(
            texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)

    return encode


def large_model_folder(shape: str, like: Path, root: Path) -> Path:
    """A random-weight BERT of ``LAYERSxHIDDEN`` (fp16 safetensors) with MiniLM's tokenizer, as a model folder the
    package and sentence-transformers both load."""
    import shutil

    import torch
    from transformers import BertConfig, BertModel

    layers, hidden = (int(x) for x in shape.lower().split("x"))
    folder = root / f"bert-{layers}x{hidden}-random"
    folder.mkdir(parents=True, exist_ok=True)
    config = BertConfig(
        vocab_size=30522,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=max(1, hidden // 64),
        intermediate_size=4 * hidden,
        max_position_embeddings=512,
    )
    torch.manual_seed(0)
    BertModel(config).to(torch.float16).save_pretrained(folder)
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json", "modules.json"):
        if (like / name).exists():
            shutil.copy2(like / name, folder / name)
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 256, "do_lower_case": False}))
    (folder / "1_Pooling").mkdir(exist_ok=True)
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps({"word_embedding_dimension": hidden, "pooling_mode_mean_tokens": True})
    )
    # Normalize is in MiniLM's modules.json; keep only the modules this folder has.
    modules = json.loads((like / "modules.json").read_text()) if (like / "modules.json").exists() else []
    kept = [m for m in modules if m["type"].endswith(("Transformer", "Pooling", "Normalize"))]
    (folder / "modules.json").write_text(json.dumps(kept))
    return folder


def weights_folder(model: str) -> Path:
    """The folder whose PyTorch weights the torch rows and sentence-transformers load."""
    from adaptive_retrieval.components.models import weights_dir

    return weights_dir(resolve_model_dir(model))


def run_model(
    label: str,
    model: str,
    device: str,
    texts: list[str],
    qs: list[str],
    batch_size: int,
    reference: Reference | None,
    args: argparse.Namespace,
    accuracy: bool,
) -> list[Row]:
    """Every row for one model."""
    from adaptive_retrieval.components.models import TorchEncoder

    ref = reference if accuracy else None
    gpu = device == "cuda"
    half = "fp16" if gpu else "fp32"
    precisions = ["fp32", "fp16", "bf16", "fp8"] if gpu else ["fp32"]

    skipped: list[Row] = []
    measured: list[Row] = []
    encoders: list[Callable[[list[str]], np.ndarray]] = []

    def add(name: str, make: Callable[[], tuple[Callable, str]]) -> None:
        logger.info("%s: loading %s", label, name)
        try:
            encode, note = make()
        except Exception as err:  # a row that cannot run here says why; the others still run
            skipped.append(Row(label, name, note=f"skipped: {type(err).__name__}: {err}"[:300]))
            return
        measured.append(Row(label, name, note=note))
        encoders.append(encode)

    for precision in precisions:

        def package(precision: str = precision) -> tuple[Callable, str]:
            encoder = TorchEncoder(model, precision, device, compiled=False)
            described = encoder.describe()
            note = f"runs {described.precision}" if described.precision != precision else ""
            return lambda t: encoder.encode(t, batch_size=batch_size), note

        add(f"package torch {precision}", package)

    def old_path() -> tuple[Callable, str]:
        encoder = TorchEncoder(model, half, device, compiled=False)
        return lambda t: TokenEncoder.encode(encoder, t, batch_size=batch_size), "host pooling (before)"

    add(f"old torch path {half}", old_path)

    if args.compiled:
        for precision in ("fp16", "fp8"):

            def compiled(precision: str = precision) -> tuple[Callable, str]:
                start = time.perf_counter()
                encoder = TorchEncoder(model, precision, device, compiled=True)
                encoder.encode(texts[: batch_size * 4], batch_size=batch_size)  # compile every width it meets
                encoder.encode(qs[:1], batch_size=batch_size)
                return lambda t: encoder.encode(t, batch_size=batch_size), (
                    f"compile+warm-up {time.perf_counter() - start:.0f} s"
                )

            add(f"package torch {precision} compiled", compiled)

    if accuracy:
        for precision in ("fp32", "int8", "fp16") if gpu else ("fp32", "int8"):

            def onnx(precision: str = precision) -> tuple[Callable, str]:
                encoder = get_encoder(model, precision, device, backend="onnx")
                binding = "IO binding" if getattr(encoder, "io_binding", False) else "run()"
                return lambda t: encoder.encode(t, batch_size=batch_size), f"{device} EP, {binding}"

            add(f"package onnx {precision}", onnx)

    def st() -> tuple[Callable, str]:
        return sentence_transformers_encode(weights_folder(model), device, half, batch_size), ""

    add(f"sentence-transformers {half}", st)

    def bare() -> tuple[Callable, str]:
        encoder = TorchEncoder(model, half, device, compiled=False)
        return bare_forward(encoder, batch_size), "pretokenised; the limit"

    add(f"bare forward + device pooling {half}", bare)
    logger.info("%s: measuring %d rows, %d rounds", label, len(measured), args.rounds)
    measure(measured, encoders, texts, qs, device, batch_size, ref, args.rounds, args.query_runs)
    return measured + skipped


def find(rows: list[Row], model: str, name: str) -> Row | None:
    return next((r for r in rows if r.model == model and r.name == name and r.passages_per_s), None)


def check_targets(rows: list[Row], model: str, device: str) -> list[dict[str, Any]]:
    """This run's figures against the targets of issue 43 (they apply on a GPU only)."""
    half = "fp16" if device == "cuda" else "fp32"
    fp16, bf16 = find(rows, model, f"package torch {half}"), find(rows, model, "package torch bf16")
    bare, st = (
        find(rows, model, f"bare forward + device pooling {half}"),
        find(rows, model, f"sentence-transformers {half}"),
    )
    old = find(rows, model, f"old torch path {half}")
    c16, c8 = find(rows, model, "package torch fp16 compiled"), find(rows, model, "package torch fp8 compiled")

    def ratio(a: Row | None, b: Row | None) -> float | None:
        return a.passages_per_s / b.passages_per_s if a and b and a.passages_per_s and b.passages_per_s else None

    figures = [
        ratio(fp16, bare),
        ratio(fp16, st),
        fp16.query_ms if fp16 else None,
        fp16.top10 if fp16 else None,
        bf16.top10 if bf16 else None,
        ratio(c8, c16),
    ]
    bounds = [(0.9, True), (2.5, True), (3.0, False), (0.99, True), (0.99, True), (1.3, True)]
    out = []
    for (name, bound_text), value, (bound, higher) in zip(TARGETS, figures, bounds, strict=True):
        met = None if value is None else (value >= bound if higher else value <= bound)
        verdict = "not measured" if met is None else ("met" if met else "MISSED")
        if device != "cuda":
            verdict = "GPU target (CPU run: does not apply)"
            name = name.replace("fp16", f"{half} (fp16 on a GPU)", 1) if name.startswith("fp16") else name
        out.append({"target": name, "bound": bound_text, "value": value, "verdict": verdict})
    out.append(
        {
            "target": f"package {half} vs old torch path",
            "bound": "(before/after)",
            "value": ratio(fp16, old),
            "verdict": "-",
        }
    )
    return out


def fmt(value: float | None, pattern: str) -> str:
    return "-" if value is None else format(value, pattern)


def rate(value: float | None) -> str:
    """Passages per second with three significant figures at least (a CPU runs a few a second)."""
    return "-" if value is None else (f"{value:,.0f}" if value >= 100 else f"{value:.3g}")


def print_table(rows: list[Row], device_name: str, batch_size: int, n: int) -> None:
    print(f"\n{device_name}, {n} passages, batch {batch_size}\n")
    print("| model | row | passages/s | 1 query (ms) | cos mean | cos min | top-10 overlap | note |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r.model} | {r.name} | {rate(r.passages_per_s)} | {fmt(r.query_ms, '.1f')} | "
            f"{fmt(r.cos_mean, '.4f')} | {fmt(r.cos_min, '.4f')} | {fmt(r.top10, '.3f')} | {r.note} |"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--passages", type=int, default=None, help="default 16384 on cuda, 256 on cpu")
    parser.add_argument("--queries", type=int, default=None, help="top-10 queries; default 256 on cuda, 32 on cpu")
    parser.add_argument("--query-runs", type=int, default=None, help="single-query timings (median); default 50/10")
    parser.add_argument("--batch-size", type=int, default=None, help="default 256 on cuda, 32 on cpu")
    parser.add_argument("--model", default=DEFAULT_MODEL, help="model folder or name (the carry bundle's folder)")
    parser.add_argument("--reference", type=Path, default=None, help="CPU fp32 ONNX reference (.npz) to read")
    parser.add_argument("--write-reference", type=Path, default=None, help="compute the reference and write it")
    parser.add_argument("--large", default=None, help="LAYERSxHIDDEN random BERT, or 'none'; default 24x1024 on cuda")
    parser.add_argument("--compiled", action="store_true", help="also torch.compile fp16 and fp8 (slow to compile)")
    parser.add_argument("--rounds", type=int, default=3, help="throughput rounds, rows taking turns (the best)")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads of torch and ONNX Runtime (all rows)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    gpu = args.device == "cuda"
    n = args.passages or (16384 if gpu else 256)
    q = args.queries or (256 if gpu else 32)
    args.query_runs = args.query_runs or (50 if gpu else 10)
    batch_size = args.batch_size or (256 if gpu else 32)
    large = args.large or ("24x1024" if gpu else "none")

    import torch

    if args.threads:
        # Every row alike: torch's intra-op threads and each ONNX Runtime session's (read when a session opens).
        torch.set_num_threads(args.threads)
        os.environ["ADAPTIVE_ORT_THREADS"] = str(args.threads)
    if gpu and not torch.cuda.is_available():
        print("No CUDA GPU here: run with --device cpu (a smoke test), or on a GPU machine.", file=sys.stderr)
        return 2
    device_name = torch.cuda.get_device_name() if gpu else f"CPU ({platform.processor() or platform.machine()})"
    texts, qs = passages(n), queries(q)
    reference: Reference | None = None
    if args.reference:
        reference = Reference.load(args.reference)
        if reference.digest != texts_digest(texts + qs):
            print(f"{args.reference} was computed on other passages or queries: pass the same --passages/--queries.")
            return 2
    else:
        try:
            reference = compute_reference(args.model, texts, qs, batch_size)
        except Exception as err:  # no ONNX model here: accuracy columns stay empty, and the note says why
            logger.warning("No CPU fp32 ONNX reference (%s): accuracy columns left empty", err)
        if reference is not None and args.write_reference:
            reference.save(args.write_reference)

    rows = run_model("all-MiniLM-L6-v2", args.model, args.device, texts, qs, batch_size, reference, args, True)
    if large.lower() != "none":
        with tempfile.TemporaryDirectory() as tmp:
            folder = large_model_folder(large, weights_folder(args.model), Path(tmp))
            rows += run_model(
                f"BERT {large} random", str(folder), args.device, texts, qs, batch_size, None, args, False
            )
    print_table(rows, f"{device_name}, {torch.get_num_threads()} torch threads", batch_size, n)
    targets = check_targets(rows, "all-MiniLM-L6-v2", args.device)
    print("\nTargets of issue 43 (H100/H200, MiniLM, batch 256):\n")
    print("| target | bound | this run | verdict |\n|---|---|---|---|")
    for t in targets:
        print(f"| {t['target']} | {t['bound']} | {fmt(t['value'], '.3f')} | {t['verdict']} |")
    if args.json:
        record = {
            "device": args.device,
            "device_name": device_name,
            "torch": torch.__version__,
            "passages": n,
            "queries": q,
            "batch_size": batch_size,
            "threads": torch.get_num_threads(),
            "reference": "CPU fp32 ONNX" if reference is not None else None,
            "rows": [{k: v for k, v in asdict(r).items() if k != "vectors"} for r in rows],
            "targets": targets,
        }
        args.json.write_text(json.dumps(record, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
