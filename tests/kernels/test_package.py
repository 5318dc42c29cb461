"""Package wiring: the interpreter choice, the single triton import, an sm_90 compile."""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "eaglegraph" / "kernels"


def _run(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def _env(**overrides: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    env.update({k: v for k, v in overrides.items() if v is not None})
    return env


@pytest.mark.skipif(torch.cuda.is_available(), reason="the interpreter is chosen only without CUDA")
def test_interpreter_chosen_before_triton_without_cuda() -> None:
    code = (
        "import os, eaglegraph.kernels.gather as g\n"
        "print(os.environ['TRITON_INTERPRET'], type(g._gather_rows_kernel).__name__)"
    )
    proc = _run(code, _env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1", "InterpretedFunction"]


def test_explicit_environment_wins() -> None:
    proc = _run(
        "import os, eaglegraph.kernels; print(os.environ['TRITON_INTERPRET'])",
        _env(TRITON_INTERPRET="0"),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "0"


@pytest.mark.skipif(torch.cuda.is_available(), reason="the interpreter is chosen only without CUDA")
def test_interpreter_skips_only_dead_work() -> None:
    """The interpreter's integer-overflow check (dead: it feeds a device_assert that is off
    without debug) is disabled, and reductions go straight to its numpy fast path."""
    import triton.language as tl
    from triton.runtime import interpreter

    import eaglegraph.kernels._triton as kt

    assert kt.interpreting()
    options = interpreter.interpreter_builder.options
    assert not options.debug and not options.sanitize_overflow
    assert kt.reduce_max is not tl.max and kt.reduce_sum is not tl.sum


def test_kernel_modules_import_triton_only_through_the_package() -> None:
    for path in sorted(KERNELS.glob("*.py")):
        if path.name == "_triton.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            assert not any(n == "triton" or n.startswith("triton.") for n in names), path.name


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("triton.backends.nvidia") is None, reason="no NVIDIA backend in triton"
)
def test_every_kernel_compiles_for_sm90() -> None:
    """The interpreter accepts code the GPU compiler rejects: compile for H100, launch nothing."""
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("sm90_compile.py"))],
        env=_env(TRITON_INTERPRET="0"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "FAILED" not in proc.stdout
