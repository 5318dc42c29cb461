"""The interpreter's speed-ups change no result: ``triton.language`` patched once per launch
(`kernels.language_patch`), numpy's BLAS on one thread (`kernels.blas`) and the prefill tiles
that allows."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest
import torch

from eaglegraph.kernels._triton import interpreting, tl, triton
from eaglegraph.kernels.attention import tiles

pytestmark = pytest.mark.skipif(not interpreting(), reason="Triton's CPU interpreter only")


@triton.jit
def _scaled(x, factor):
    return x * factor


@triton.jit
def _offset(x, extra):
    return _scaled(x, 2) + extra


@triton.jit
def _helpers_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    x = tl.load(x_ptr + offs, mask=ok, other=0.0)
    for i in range(3):  # a helper per loop step, as the attention kernels call them
        x = _offset(x, i)
    tl.store(out_ptr + offs, x, mask=ok)


def test_helpers_patch_the_language_once_per_launch(monkeypatch: pytest.MonkeyPatch) -> None:
    interpreter: Any = importlib.import_module("triton.runtime.interpreter")
    assert getattr(interpreter._patch_lang, "_once", False), "kernels._triton installs it"
    patched: list[object] = []  # each real patch starts with the builtins of triton.language
    builtins = interpreter._patch_builtin

    def counting(pkg: Any, *args: Any) -> Any:
        if pkg is tl:
            patched.append(pkg)
        return builtins(pkg, *args)

    monkeypatch.setattr(interpreter, "_patch_builtin", counting)
    x = torch.arange(37, dtype=torch.float32)
    out = torch.empty_like(x)
    _helpers_kernel[(3,)](x, out, 37, BLOCK=16)
    want = x.clone()
    for i in range(3):
        want = want * 2 + i
    assert torch.equal(out, want)
    # one patch for the launch; the 18 helper calls (3 programs x 3 steps x 2) find it done
    assert len(patched) == 1
    # the launch still restores the language when its grid is done
    assert tl.core.is_builtin(tl.arange)


def test_numpy_blas_runs_on_one_thread() -> None:
    """With numpy's own OpenBLAS (the wheels'), the dot cap is the large one."""
    blas = np.__config__.CONFIG["Build Dependencies"]["blas"]["name"]  # type: ignore[attr-defined]
    if "openblas" not in blas:
        pytest.skip(f"numpy uses {blas}")
    assert tiles.ONE_BLAS_THREAD
    assert tiles.INTERP_MAX_DOT == 1 << 24


def test_long_prefill_takes_few_kv_steps() -> None:
    """A 1,000-token prompt of the tiny presets (2 kv heads of 16, 2 query heads each) under
    a 1,024-position block table: 256 tokens per program, 128 positions per KV step; each
    tile stays within Triton's 2**20 elements."""
    if not tiles.ONE_BLAS_THREAD:
        pytest.skip("numpy's BLAS could not be limited to one thread")
    bm, gp2, kvh, bn, bd = tiles.prefill_tiles(16, 2, 2, 1017, 1024)
    assert (bm, gp2, kvh, bn, bd) == (256, 2, 2, 128, 16)
    rows = bm * kvh * gp2
    assert rows * bn <= 1 << 20 and rows * kvh * bd <= 1 << 20


SHAPES = [[16], [2, 4], [1, 64], [128, 1, 32], [1, 1]]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_cached_shapes_build_what_triton_builds(shape: Any) -> None:
    """Block types and tensors from the shape cache (`kernels.type_cache`) have every field
    of the ones Triton's own constructors build, on first sight and from the cache; the
    shape can be a list, a ``tl.tuple`` or hold constexprs."""
    from eaglegraph.kernels.type_cache import fields

    block_type: Any = tl.core.block_type
    tensor: Any = tl.core.tensor
    assert getattr(block_type.__init__, "_eg_cached", False), "kernels._triton installs it"
    original_block = block_type.__init__._eg_original
    original_tensor = tensor.__init__._eg_original
    spellings = [list(shape), tl.core.tuple(list(shape)), [tl.constexpr(d) for d in shape]]
    for element in (tl.float32, tl.int1, tl.pointer_type(tl.float16)):
        for spelled in spellings:
            want = block_type.__new__(block_type)
            original_block(want, element, spelled)
            want_t = tensor.__new__(tensor)
            original_tensor(want_t, "handle", want)
            for _ in range(2):  # the first may learn the shape, the second reads it
                got = block_type(element, spelled)
                assert fields(got) == fields(want)
                assert got == want and str(got) == str(want)
                got_t = tensor("handle", got)
                assert fields(got_t) == fields(want_t)
                assert got_t.shape is not want_t.shape and got.shape is not want.shape


def test_cached_shapes_still_refuse_what_triton_refuses() -> None:
    """Shapes Triton rejects are rejected the same way, however often they are tried."""
    for _ in range(2):
        with pytest.raises(ValueError, match="must be a power of 2"):
            tl.core.block_type(tl.float32, [3, 4])
        with pytest.raises(TypeError, match="0d block_type is forbidden"):
            tl.core.block_type(tl.float32, [])


def test_interpreter_semantic_skips_only_no_op_broadcasts_and_casts() -> None:
    """The interpreter's semantic object returns blocks of one shape, and tensors already of
    the computation type, as they are; anything else still goes through Triton's methods."""
    interpreter: Any = importlib.import_module("triton.runtime.interpreter")
    semantic = interpreter.interpreter_semantic
    general = type(semantic)
    assert "broadcast_impl_value" in vars(semantic), "kernels.type_cache installs it"

    def block(shape: list[int], dtype: Any = tl.float32) -> Any:
        data = np.zeros(shape, dtype=interpreter._get_np_dtype(dtype))
        return tl.core.tensor(
            interpreter.TensorHandle(data, dtype), tl.core.block_type(dtype, shape)
        )

    a, b = block([4, 8]), block([4, 8])
    assert semantic.broadcast_impl_value(a, b) == (a, b)
    assert general.broadcast_impl_value(semantic, a, b) == (a, b)
    for lhs, rhs in [(block([4, 1]), block([4, 8])), (block([8]), block([4, 8]))]:
        got = semantic.broadcast_impl_value(lhs, rhs)
        want = general.broadcast_impl_value(semantic, lhs, rhs)
        assert [list(t.shape) for t in got] == [list(t.shape) for t in want] == [[4, 8]] * 2
        assert all(
            np.array_equal(g.handle.data, w.handle.data) for g, w in zip(got, want, strict=True)
        )
    assert semantic._cast_to_computation_type(a, tl.float32) is a
    cast = semantic._cast_to_computation_type(a, tl.float64)
    assert cast.dtype == tl.float64 and cast.handle.data.dtype == np.float64
    three = semantic._cast_to_computation_type(3, tl.int64)
    assert three.dtype == tl.int64 and three.handle.data.tolist() == [3]


def test_builtins_listed_once_patch_what_triton_patches() -> None:
    """Each launch's patch (``_patch_builtin``, its members listed once per set of names by
    `kernels.language_patch`) changes the same attributes, in the same order, to the same
    builtins as Triton's own listing; twice in a row too, and each scope restores them."""
    interpreter: Any = importlib.import_module("triton.runtime.interpreter")
    listed = interpreter._patch_builtin
    assert getattr(listed, "_listed_once", False), "kernels._triton installs it"
    before = {name: getattr(tl, name) for name in dir(tl)}
    for pkg in (tl, tl.tensor, tl.math, tl.core, tl.core.tensor_descriptor_base):
        want = interpreter._LangPatchScope()
        listed._eg_original(pkg, interpreter.interpreter_builder, want)
        wanted = [(name, new.__defaults__) for _, name, _ in want._changes
                  for new in [getattr(pkg, name)]]  # fmt: skip
        want.restore()
        for _ in range(2):
            got = interpreter._LangPatchScope()
            listed(pkg, interpreter.interpreter_builder, got)
            assert [
                (name, getattr(pkg, name).__defaults__) for _, name, _ in got._changes
            ] == wanted
            assert [c[:2] for c in got._changes] == [(pkg, name) for name, _ in wanted]
            got.restore()
        assert wanted, pkg
    assert {name: getattr(tl, name) for name in dir(tl)} == before
