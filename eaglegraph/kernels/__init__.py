"""Triton kernels of the emulated EAGLE step, with their launch wrappers.

Kernels run on CUDA, and on CPU through Triton's interpreter. The interpreter is chosen here,
before any kernel module imports triton (``triton.jit`` decides at decoration time whether a
function is compiled or interpreted), and only when no CUDA device is present; an explicit
``TRITON_INTERPRET`` from the environment always wins. Kernel modules import triton through
``eaglegraph.kernels._triton`` so this always runs first.
"""

from __future__ import annotations

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
