"""Fixtures for the kernel tests: the device kernels can run on, and seeded generators.

Kernels run compiled on CUDA when a GPU is present, otherwise through Triton's interpreter
on CPU (``eaglegraph.kernels`` sets ``TRITON_INTERPRET`` before triton is imported). The
``device`` fixture is that one device, so every test runs unchanged on either.
"""

from __future__ import annotations

import pytest
import torch

import eaglegraph.kernels  # noqa: F401  (chooses the interpreter before triton is imported)
from eaglegraph.kernels._triton import interpreting


def available_devices() -> list[str]:
    """Devices kernels can run on in this process."""
    devices = []
    if interpreting():
        devices.append("cpu")
    elif torch.cuda.is_available():
        devices.append("cuda")
    return devices


@pytest.fixture(params=available_devices())
def device(request: pytest.FixtureRequest) -> torch.device:
    return torch.device(request.param)


@pytest.fixture
def gen() -> torch.Generator:
    """A CPU generator: tests draw on CPU, then move, so values match across devices."""
    return torch.Generator().manual_seed(1234)
