"""Triton's CPU interpreter: block types and tensor shapes built once per shape, not per op.

Under the interpreter every tile operation makes new ``tl.tensor`` objects, and most make a
new ``tl.block_type`` too (a cast, a splat, a broadcast, each result of a binary op). Their
constructors rebuild the same things each time: the block type unwraps and validates its
shape, boxes it in a ``tl.tuple`` and types each dimension; the tensor boxes every dimension
in a fresh ``constexpr`` and types the tuple again. In a probe case that is about a quarter
of the interpreter's time, for shapes a kernel repeats thousands of times. Here each shape
is built the slow way the first time it is seen (the original constructor, which validates
it and raises what it always raised) and its pieces are reused afterwards: the dimension
types, the element count and the text of the shape. Every object gets its own ``tl.tuple``
and list of dimensions; only immutable pieces (``tuple_type``, ``constexpr``) are shared.
``_get_np_dtype``, which builds a dict of every numpy dtype on each call, is memoised per
Triton dtype. Results are unchanged (`tests/kernels/test_interpreter_speed.py` checks the
objects field by field against the original constructors); if Triton's internals differ,
nothing is changed. Installed only under the interpreter (``_triton.py``): compiled kernels
never see it.
"""

from __future__ import annotations

import importlib
import numbers
from collections.abc import Callable
from typing import Any, NamedTuple


class _Shape(NamedTuple):
    """What a block type and its tensors derive from a shape, computed once."""

    dims_type: Any  # tuple_type of the block type's int dimensions
    numel: int
    text: str  # the shape as block_type.name spells it
    boxed: list[Any]  # the tensor's constexpr dimensions
    boxed_type: Any  # their tuple_type
    count: Any  # constexpr(numel), the tensor's numel


def _shape_key(shape: Any, ttuple: Any, constexpr: Any) -> tuple[int, ...] | None:
    """The shape as plain ints, where it is a list or ``tl.tuple`` of ints or int
    constexprs; None for anything else (the original constructor then handles it)."""
    cls = type(shape)
    values: list[Any]
    if cls is list:
        values = shape
    elif cls is ttuple:
        values = shape.values
    else:
        return None
    key: list[int] = []
    for v in values:
        if type(v) is int:
            key.append(v)
        elif type(v) is constexpr and type(v.value) is int:
            key.append(v.value)
        else:
            return None
    return tuple(key)


def fields(obj: Any) -> dict[str, Any]:
    """An object's fields, tuples and constexprs read as plain values (the self-check's and
    the tests' view of a block type or tensor)."""
    out: dict[str, Any] = {}
    for name, value in vars(obj).items():
        if name.startswith("_eg"):
            continue
        if hasattr(value, "values") and hasattr(value, "type"):  # a tl.tuple
            value = (
                type(value),
                [getattr(v, "value", v) for v in value.values],
                [(type(t), t.value) for t in value.type.types],
            )
        elif hasattr(value, "value") and not hasattr(value, "handle"):  # a constexpr
            value = (type(value), value.value)
        out[name] = value
    return out


def cache_shapes() -> bool:
    """Install the caches (see the module docstring); False where Triton's internals are
    not the ones this reproduces, which are then left alone."""
    try:
        core: Any = importlib.import_module("triton.language.core")
        interpreter: Any = importlib.import_module("triton.runtime.interpreter")
    except ImportError:  # pragma: no cover - every supported triton has them
        return False
    block_type = getattr(core, "block_type", None)
    tensor = getattr(core, "tensor", None)
    ttuple = getattr(core, "tuple", None)
    constexpr = getattr(core, "constexpr", None)
    np_dtype = getattr(interpreter, "_get_np_dtype", None)
    if not all(isinstance(c, type) for c in (block_type, tensor, ttuple, constexpr)):
        return False
    assert block_type is not None and tensor is not None
    assert ttuple is not None and constexpr is not None
    block_init = vars(block_type).get("__init__")
    tensor_init = vars(tensor).get("__init__")
    if block_init is None or tensor_init is None or np_dtype is None:
        return False
    if getattr(block_init, "_eg_cached", False):  # installed already
        return True
    original_block: Callable[..., None] = block_init
    original_tensor: Callable[..., None] = tensor_init
    original_np_dtype: Callable[[Any], Any] = np_dtype
    shapes: dict[tuple[int, ...], _Shape] = {}
    new_tuple = object.__new__

    def learn(block: Any, key: tuple[int, ...]) -> _Shape | None:
        """Record a shape from a block type the original constructor built; None where it
        does not look as expected (that shape then always takes the original path)."""
        shape = block.shape
        if type(shape) is not ttuple or list(shape.values) != list(key):
            return None
        probe = tensor.__new__(tensor)
        original_tensor(probe, None, block)
        boxed = probe.shape
        if type(boxed) is not ttuple or [getattr(v, "value", None) for v in boxed.values] != list(
            key
        ):
            return None
        text = str(shape)
        if block.name != f"<{text}, {block.element_ty}>":
            return None
        entry = _Shape(shape.type, block.numel, text, list(boxed.values), boxed.type, probe.numel)
        shapes[key] = entry
        return entry

    def init_block(self: Any, element_ty: Any, shape: Any) -> None:
        key = _shape_key(shape, ttuple, constexpr)
        entry = shapes.get(key) if key is not None else None
        if key is None or entry is None:
            original_block(self, element_ty, shape)
            if key is not None and learn(self, key) is not None:
                self._eg_dims = key
            return
        self.element_ty = element_ty
        self.shape = dims = new_tuple(ttuple)  # tl.tuple(list(key), dims_type), unchecked
        dims.values = list(key)
        dims.type = entry.dims_type
        self.numel = entry.numel
        self.name = f"<{entry.text}, {element_ty}>"
        self._eg_dims = key

    def init_tensor(self: Any, handle: Any, type: Any) -> None:  # Triton's names
        key = getattr(type, "_eg_dims", None)
        entry = shapes.get(key) if key is not None else None
        if entry is None or not type.is_block():
            original_tensor(self, handle, type)
            return
        self.handle = handle
        self.shape = dims = new_tuple(ttuple)  # tl.tuple(list(entry.boxed), boxed_type)
        dims.values = list(entry.boxed)
        dims.type = entry.boxed_type
        self.numel = entry.count
        self.type = type
        self.dtype = type.scalar

    np_dtypes: dict[Any, Any] = {}

    def get_np_dtype(tt_dtype: Any) -> Any:
        try:
            return np_dtypes[tt_dtype]
        except (KeyError, TypeError):  # not seen yet, or unhashable (the original decides)
            pass
        result = original_np_dtype(tt_dtype)
        try:
            np_dtypes[tt_dtype] = result
        except TypeError:
            pass
        return result

    # self-check: the cached path must build what the original constructors build
    f32 = getattr(core, "float32", None)
    if f32 is None:
        return False
    try:
        for shape in ([2, 4], ttuple([constexpr(8), 1]), [16]):
            slow = block_type.__new__(block_type)
            original_block(slow, f32, shape)
            fast = block_type.__new__(block_type)
            init_block(fast, f32, shape)  # first sight: the original path, learnt
            again = block_type.__new__(block_type)
            init_block(again, f32, shape)  # the cached path
            if not (fields(slow) == fields(fast) == fields(again)):
                shapes.clear()
                return False
            slow_t = tensor.__new__(tensor)
            original_tensor(slow_t, None, slow)
            fast_t = tensor.__new__(tensor)
            init_tensor(fast_t, None, again)
            if fields(slow_t) != fields(fast_t):
                shapes.clear()
                return False
    except Exception:  # pragma: no cover - internals other than these
        shapes.clear()
        return False

    semantic = getattr(interpreter, "interpreter_semantic", None)
    if semantic is not None:
        _same_shape_broadcasts(semantic, block_type, ttuple)
    init_block._eg_cached = True  # type: ignore[attr-defined]
    init_block._eg_original = original_block  # type: ignore[attr-defined]
    init_tensor._eg_original = original_tensor  # type: ignore[attr-defined]
    setattr(block_type, "__init__", init_block)  # noqa: B010 (a class mypy cannot see into)
    setattr(tensor, "__init__", init_tensor)  # noqa: B010
    setattr(interpreter, "_get_np_dtype", get_np_dtype)  # noqa: B010
    return True


def _same_shape_broadcasts(semantic: Any, block_type: Any, ttuple: Any) -> None:
    """Two blocks of one shape need no broadcast, and a tensor already of the computation
    type needs no cast: the interpreter's semantic object (only it) returns them as they are
    without Triton's general checks, which reach the same answer (``broadcast_impl_value``
    builds the common shape and finds both equal to it; ``cast`` returns a tensor of the
    type asked for). Every other case goes to Triton's own methods."""
    broadcast = getattr(semantic, "broadcast_impl_value", None)
    to_computation = getattr(semantic, "_cast_to_computation_type", None)
    if broadcast is None or to_computation is None or "broadcast_impl_value" in vars(semantic):
        return
    general_broadcast: Callable[[Any, Any], Any] = broadcast
    general_cast: Callable[[Any, Any], Any] = to_computation

    def broadcast_impl_value(lhs: Any, rhs: Any) -> Any:
        lhs_ty = lhs.type
        rhs_ty = rhs.type
        if type(lhs_ty) is block_type and type(rhs_ty) is block_type:
            lhs_shape = lhs_ty.shape
            rhs_shape = rhs_ty.shape
            if (
                type(lhs_shape) is ttuple
                and type(rhs_shape) is ttuple
                and lhs_shape.values == rhs_shape.values
            ):
                return lhs, rhs
        return general_broadcast(lhs, rhs)

    def cast_to_computation_type(value: Any, dtype: Any) -> Any:
        if not isinstance(value, numbers.Number) and value.type.scalar is dtype.scalar:
            return value
        return general_cast(value, dtype)

    semantic.broadcast_impl_value = broadcast_impl_value
    semantic._cast_to_computation_type = cast_to_computation_type
