"""GPU embedder benchmark: throughput and cosine to fp32 for fp32 / fp16 / bf16 / fp8 on the same passages.

    python scripts/bench_gpu.py [--passages 4096] [--batch-size 256] [--json OUT.json]

Needs a CUDA GPU (fp8: compute capability >= 8.9, e.g. H100) and the 'gpu' extra (torchao). The reference is
the fp32 PyTorch model on the same GPU; ONNX Runtime CPU int8 is measured too for scale.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from adaptive_retrieval.components.models.encoder import get_encoder
from adaptive_retrieval.components.models.paths import DEFAULT_MODEL


def passages(n: int) -> list[str]:
    from pydoc_data.topics import topics

    words = " ".join(topics.values()).split()
    return [" ".join(words[(i * 97) % (len(words) - 200) :][: 40 + (i % 5) * 30]) for i in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passages", type=int, default=4096)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("No CUDA GPU here: this benchmark needs one (see README, GPU section).")
    texts = passages(args.passages)
    results: dict[str, dict[str, float]] = {}
    reference = None
    for precision, device in (("fp32", "cuda"), ("fp16", "cuda"), ("bf16", "cuda"), ("fp8", "cuda")):
        try:
            if precision == "fp32":
                from adaptive_retrieval.components.models.torch_encoder import TorchEncoder

                encoder = TorchEncoder(args.model, "fp32", "cuda")
            else:
                encoder = get_encoder(args.model, precision, device)
        except RuntimeError as err:
            print(f"{precision}: skipped ({err})")
            continue
        encoder.encode(texts[: args.batch_size], batch_size=args.batch_size)  # warm-up, kernels, autotuning
        torch.cuda.synchronize()
        start = time.perf_counter()
        vectors = encoder.encode(texts, batch_size=args.batch_size)
        torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
        if reference is None:
            reference = vectors
        cos = (reference * vectors).sum(axis=1)
        results[precision] = {
            "passages_per_s": len(texts) / elapsed,
            "cos_mean": float(cos.mean()),
            "cos_min": float(np.min(cos)),
        }
    base = results.get("fp16", {}).get("passages_per_s")
    print(f"| precision | passages/s | vs fp16 | cos mean | cos min |  ({torch.cuda.get_device_name()})")
    print("|---|---|---|---|---|")
    for precision, r in results.items():
        ratio = f"{r['passages_per_s'] / base:.2f}x" if base else "-"
        print(f"| {precision} | {r['passages_per_s']:.0f} | {ratio} | {r['cos_mean']:.4f} | {r['cos_min']:.4f} |")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"device": torch.cuda.get_device_name(), "results": results}, fh, indent=2)


if __name__ == "__main__":
    main()
