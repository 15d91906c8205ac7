"""Write what a bare GPU machine needs to run ``scripts/lab/bench_gpu.py`` in one short call: the packaged
all-MiniLM-L6-v2 weights as fp16 safetensors (~45 MB) with its tokenizer and sentence-transformers files, the CPU
fp32 ONNX reference computed here, and (``--wheels``) the wheels of what the benchmark imports that such a machine
lacks (it has torch, transformers, sentence-transformers, tokenizers and CPU onnxruntime).

    python scripts/lab/gpu_carry_bundle.py gpu-carry [--passages 16384] [--queries 256] [--wheels]

Then, on the GPU machine, from the repository root (the bundle carried beside it):

    pip install --no-index --no-deps gpu-carry/wheels/*.whl     # only with --wheels
    python scripts/lab/bench_gpu.py --model gpu-carry/all-MiniLM-L6-v2 --reference gpu-carry/reference.npz \\
        --json bench.json

The reference stores the passage vectors as float16 (cosines to 4 decimals are unchanged; 16,384 passages take
12.6 MB) and each query's top-10 computed in fp32 on the CPU.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import json
import logging
import re
import shutil
import subprocess
import sys
from pathlib import Path

from bench_gpu import compute_reference, passages, queries

from adaptive_retrieval.components.models import DEFAULT_MODEL

logger = logging.getLogger("gpu_carry_bundle")

#: What the bare GPU machine has installed (with everything these require).
ON_THE_MACHINE = ("torch", "transformers", "sentence-transformers", "tokenizers", "onnxruntime")
#: Their import names: whatever importing these imports is on the machine too.
THEIR_IMPORTS = ("torch", "transformers", "sentence_transformers", "tokenizers", "onnxruntime")
#: The modules the benchmark imports there.
BENCH_IMPORTS = (
    "bench_gpu",
    "adaptive_retrieval.components.models.torch_encoder",
    "adaptive_retrieval.components.models.torch_runner",
    "adaptive_retrieval.components.models.device_pooling",
    "adaptive_retrieval.components.models.onnx_encoder",
    "adaptive_retrieval.components.models.encoder",
    "sentence_transformers",
)


def _name(requirement: str) -> str:
    return re.split(r"[\s;<>=!~\[(]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def closure(roots: tuple[str, ...]) -> set[str]:
    """The distributions ``roots`` need, recursively (requirements without an ``extra`` marker)."""
    seen: set[str] = set()
    todo = [r.lower() for r in roots]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = md.requires(name) or []
        except md.PackageNotFoundError:
            continue
        todo += [_name(r) for r in requires if "extra ==" not in r and "extra==" not in r]
    return seen


def imported_distributions(modules: tuple[str, ...] = BENCH_IMPORTS) -> dict[str, str]:
    """``name -> version`` of every distribution that importing ``modules`` imports (in a fresh interpreter)."""
    code = (
        "import importlib, json, sys\n"
        f"for m in {list(modules)!r}: importlib.import_module(m)\n"
        "import importlib.metadata as md\n"
        "dists = md.packages_distributions()\n"
        "names = {d for m in list(sys.modules) for d in dists.get(m.split('.')[0], [])}\n"
        "print(json.dumps({n: md.version(n) for n in names}))\n"
    )
    scripts = str(Path(__file__).resolve().parent)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=scripts)
    return json.loads(out.stdout.strip().splitlines()[-1])


def write_weights(out: Path) -> Path:
    """The packaged model's files, with ``model.safetensors`` in fp16 (written by transformers' ``save_pretrained``,
    which both the package and sentence-transformers load)."""
    import torch
    from transformers import AutoModel

    from adaptive_retrieval.components.models import packaged_minilm_dir

    source = packaged_minilm_dir()
    folder = out / DEFAULT_MODEL
    folder.mkdir(parents=True, exist_ok=True)
    for path in source.rglob("*"):
        if path.is_file() and path.suffix not in (".safetensors", ".bin", ".onnx", ".h5", ".msgpack", ".ot"):
            target = folder / path.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
    model = AutoModel.from_pretrained(source, dtype=torch.float16, local_files_only=True)
    model.save_pretrained(folder)  # model.safetensors in fp16, and config.json with its dtype
    return folder


def write_wheels(out: Path, python_version: str | None = None) -> list[str]:
    """This package's wheel and the wheels of the imported distributions the GPU machine lacks (for its Python
    ``python_version``, e.g. ``3.12``; default: this one's)."""
    wheels = out / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    # There: what those packages require, and what importing them imports (optional dependencies they use).
    there = closure(ON_THE_MACHINE) | {_name(n) for n in imported_distributions(THEIR_IMPORTS)}
    needed = {n: v for n, v in imported_distributions().items() if _name(n) not in there}
    needed.pop("adaptive-retrieval", None)
    needed.pop("adaptive_retrieval", None)
    root = Path(__file__).resolve().parents[2]
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(wheels), str(root)], check=True
    )
    if needed:
        specs = [f"{n}=={v}" for n, v in sorted(needed.items())]
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary=:all:",
            "-d",
            str(wheels),
        ]
        if python_version:
            cmd += ["--python-version", python_version, "--platform", "manylinux2014_x86_64"]
        subprocess.run([*cmd, *specs], check=True)
    return sorted(needed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--passages", type=int, default=16384)
    parser.add_argument("--queries", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=64, help="of the CPU reference")
    parser.add_argument("--wheels", action="store_true", help="also the wheels the bare GPU machine lacks")
    parser.add_argument("--python-version", default=None, help="the GPU machine's Python (X.Y), for its wheels")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    args.out.mkdir(parents=True, exist_ok=True)
    folder = write_weights(args.out)
    logger.info("Weights: %s (%.1f MB)", folder, (folder / "model.safetensors").stat().st_size / 1e6)
    reference = compute_reference(DEFAULT_MODEL, passages(args.passages), queries(args.queries), args.batch_size)
    reference.save(args.out / "reference.npz")
    logger.info(
        "Reference: %s (%.1f MB)", args.out / "reference.npz", (args.out / "reference.npz").stat().st_size / 1e6
    )
    if args.wheels:
        logger.info("Wheels for the bare machine: %s", ", ".join(write_wheels(args.out, args.python_version)))
    total = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
    print(f"{args.out}: {total / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
