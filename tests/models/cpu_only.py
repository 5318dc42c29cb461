"""Marker for model tests that run on CPU tensors (transformers parity, fp32 references).

On a CUDA machine Triton compiles for the GPU and does not interpret CPU tensors, so these
tests skip there; `test_models_cuda.py` covers the same modules on the GPU.
"""

from __future__ import annotations

import pytest
import torch

from eaglegraph.kernels._triton import interpreting

cpu_only = pytest.mark.skipif(
    torch.cuda.is_available() and not interpreting(),
    reason="CPU-tensor test: Triton runs CPU tensors only through its interpreter (test_models_cuda covers CUDA)",
)
