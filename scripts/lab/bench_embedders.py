"""CPU embedder comparison: torch fp32 (sentence-transformers) vs ONNX fp32 vs ONNX INT8 on the same passages.

    python scripts/lab/bench_embedders.py [--passages 1000] [--batch-size 32] [--hotpot ../shared/data/hotpotqa100]
                                      [--json OUT.json]

The reference is sentence-transformers (torch fp32) on the packaged all-MiniLM-L6-v2 folder, i.e. what stock
Haystack's SentenceTransformers embedders run; the ONNX models are the ones scripts/export_models.py builds and
the package's embedders use. Reports passages/s, the speed ratio to torch, and the mean / minimum cosine of each
embedding to the torch fp32 one. The embedders take slices of the passages in turn (--rounds), so load from
other processes on a shared machine falls on all three alike. Passages: the first N HotpotQA passages when
--hotpot is given, else windows of the Python language reference (pydoc_data, ships with CPython).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

from adaptive_retrieval.components.models import DEFAULT_MODEL, get_encoder, packaged_minilm_dir


def reference_passages(n: int) -> list[str]:
    """``n`` passages of 40-160 words cut from the Python language reference (deterministic)."""
    from pydoc_data.topics import topics

    words = " ".join(topics.values()).split()
    return [" ".join(words[(i * 97) % (len(words) - 200) :][: 40 + (i % 5) * 30]) for i in range(n)]


def hotpot_passages(folder: str, n: int) -> list[str]:
    from evaluation.data import load_hotpot

    return [f"{p.title}\n{p.text}" for p in load_hotpot(folder).passages[:n]]


def interleaved(
    encoders: dict[str, Callable[[list[str], int], np.ndarray]], texts: list[str], batch_size: int, rounds: int
) -> dict[str, tuple[np.ndarray, float]]:
    """Embed ``texts`` with every encoder, in ``rounds`` slices taken in turn, so that load from other processes
    on a shared machine falls on all of them alike. Returns ``{name: (vectors, seconds)}``."""
    for encode in encoders.values():
        encode(texts[:batch_size], batch_size)  # warm-up: sessions, allocator, thread pools
    parts: dict[str, list[np.ndarray]] = {name: [] for name in encoders}
    seconds = dict.fromkeys(encoders, 0.0)
    step = -(-len(texts) // rounds)
    for start in range(0, len(texts), step):
        chunk = texts[start : start + step]
        for name, encode in encoders.items():
            began = time.perf_counter()
            parts[name].append(np.asarray(encode(chunk, batch_size), dtype=np.float32))
            seconds[name] += time.perf_counter() - began
    return {name: (np.concatenate(parts[name]), seconds[name]) for name in encoders}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passages", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--hotpot", help="HotpotQA folder: embed its passages instead of the Python reference")
    parser.add_argument("--rounds", type=int, default=10, help="slices the embedders take in turn")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    texts = hotpot_passages(args.hotpot, args.passages) if args.hotpot else reference_passages(args.passages)

    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(packaged_minilm_dir()), device="cpu", local_files_only=True)

    def torch_encode(batch: list[str], size: int) -> np.ndarray:
        return model.encode(batch, batch_size=size, normalize_embeddings=True, show_progress_bar=False)

    encoders: dict[str, Callable[[list[str], int], np.ndarray]] = {"torch_fp32": torch_encode}
    for precision in ("fp32", "int8"):
        encoder = get_encoder(DEFAULT_MODEL, precision, "cpu")
        encoders[f"onnx_{precision}"] = lambda b, s, e=encoder: e.encode(b, batch_size=s)
    measured = interleaved(encoders, texts, args.batch_size, args.rounds)
    reference = measured["torch_fp32"][0]
    results: dict[str, dict[str, float]] = {}
    for name, (vectors, seconds) in measured.items():
        cos = (reference * vectors).sum(axis=1)
        results[name] = {
            "passages_per_s": len(texts) / seconds,
            "cos_mean": float(cos.mean()),
            "cos_min": float(cos.min()),
        }
    base = results["torch_fp32"]["passages_per_s"]
    print(
        f"{len(texts)} passages, batch {args.batch_size}, {os.cpu_count()} CPU cores, torch threads "
        f"{__import__('torch').get_num_threads()}"
    )
    print("| embedder | passages/s | vs torch fp32 | cos mean | cos min |")
    print("|---|---|---|---|---|")
    for name, r in results.items():
        r["speedup_vs_torch"] = r["passages_per_s"] / base
        print(
            f"| {name} | {r['passages_per_s']:.1f} | {r['speedup_vs_torch']:.2f}x | {r['cos_mean']:.4f} | "
            f"{r['cos_min']:.4f} |"
        )
    report = {
        "passages": len(texts),
        "source": "hotpotqa100" if args.hotpot else "pydoc_data",
        "batch_size": args.batch_size,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "results": results,
    }
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
