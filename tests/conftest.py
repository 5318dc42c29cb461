"""Shared test setup: an isolated preset cache, the cuda marker, the device fixture."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
# The suite is dominated by tiny tensors: one thread avoids OpenMP spin-waits that make each op
# ~100x slower on a loaded 2-core machine.
torch.set_num_threads(1)

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session", autouse=True)
def _preset_cache() -> Iterator[Path]:
    """Presets materialise once per session into a private cache (never the user's). Its
    path has one length whatever the run (serial, or a worker per core): the views print
    preset paths, and the 80-column checks must fold them in the same place every time."""
    root = Path(tempfile.mkdtemp(prefix="egc-"))
    os.environ["EAGLEGRAPH_CACHE"] = str(root)
    os.environ["EAGLEGRAPH_NO_PROGRESS"] = "1"
    yield root
    shutil.rmtree(root, ignore_errors=True)


# The quick loop (`pytest -m fast`, CONTRIBUTING.md): the seams and the layers, engine knowledge,
# pair reading, plans, triage and saved runs — no model is run through the Triton interpreter.
FAST = (
    "test_architecture.py",
    "known/",
    "pair/",
    "triage/",
    "results/",
    "rig/test_plan.py",
    "rig/test_engine_plans.py",
    "rig/test_step_seams.py",
    "cli/test_bad_input.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = Path(__file__).parent
    for item in items:
        where = item.path.relative_to(root).as_posix()
        if where.startswith(FAST) and "slow" not in item.keywords:
            item.add_marker(pytest.mark.fast)
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES
