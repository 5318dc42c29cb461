"""Triton's CPU interpreter: patch ``triton.language`` once per launch, not once per helper.

A launch under the interpreter (``GridExecutor.__call__``) swaps the builtins of
``triton.language`` for numpy-backed ones and restores them when its grid is done. Every call
of a ``@triton.jit`` helper inside the kernel (``InterpretedFunction.__call__``) patches the
same modules again, ~0.8 ms each (``inspect.getmembers`` over three modules), and keeps
nothing of it; the attention kernels call a helper or two per KV block and the invariant
kernels one per check, so in a probe case the re-patching is a third of the kernels' time.
While a launch runs, a helper whose language modules the launch (or an earlier helper of it)
already patched finds them patched, and this skips the repeat. Results are unchanged: the
repeat would set the same attributes to equivalent values. A helper called outside any
launch, or one that sees other language modules, is patched as before; if Triton's
internals differ, nothing is changed.
"""

from __future__ import annotations

import importlib
import inspect
import threading
from collections.abc import Callable
from typing import Any

_state = threading.local()  # .patched: per running launch, the ids of the modules it patched


class _AlreadyPatched:
    """The scope of a skipped repeat: nothing to restore."""

    def restore(self) -> None:
        return None


def _language_modules(fn: Callable[..., Any], lang: Any) -> frozenset[int]:
    """Which of ``triton.language`` and ``triton.language.core`` the function's globals
    name: the modules a patch for it changes."""
    return frozenset(id(v) for v in fn.__globals__.values() if v is lang or v is lang.core)


def _interpreter() -> Any:
    """Triton's interpreter module, or None where this Triton has none (each patch below then
    finds nothing to wrap and leaves Triton alone)."""
    try:
        return importlib.import_module("triton.runtime.interpreter")
    except ImportError:  # pragma: no cover - every supported triton has it
        return None


def patch_once_per_launch() -> bool:
    """Install the skip (see the module docstring); False where Triton's interpreter lacks
    the pieces it wraps, which are then left alone."""
    interpreter = _interpreter()
    patch = getattr(interpreter, "_patch_lang", None)
    grid = getattr(interpreter, "GridExecutor", None)
    lang = getattr(interpreter, "tl", None)
    launch = vars(grid).get("__call__") if isinstance(grid, type) else None
    if getattr(patch, "_once", False):  # installed already
        return True
    if patch is None or launch is None or lang is None:
        return False
    repatch: Callable[..., Any] = patch
    run: Callable[..., Any] = launch

    def patch_lang(fn: Callable[..., Any]) -> Any:
        stack: list[set[int]] = getattr(_state, "patched", [])
        modules = _language_modules(fn, lang)
        if stack and modules and modules <= stack[-1]:
            return _AlreadyPatched()
        scope = repatch(fn)
        if stack:
            stack[-1] |= modules
        return scope

    def run_grid(self: Any, *args: Any, **kwargs: Any) -> Any:
        stack: list[set[int]] = getattr(_state, "patched", None) or []
        _state.patched = stack
        stack.append(set())  # filled by the launch's own patch, through patch_lang
        try:
            return run(self, *args, **kwargs)
        finally:
            stack.pop()

    patch_lang._once = True  # type: ignore[attr-defined]
    setattr(interpreter, "_patch_lang", patch_lang)  # noqa: B010 (a module mypy cannot see into)
    setattr(grid, "__call__", run_grid)  # noqa: B010
    return True


def _names_key(pkg: Any) -> tuple[tuple[str, ...], ...] | None:
    """The attribute names ``dir(pkg)`` is built from, in their dicts' order (a name removed
    and set again moves, so any change of the set shows); None where ``dir`` could differ
    from them (a module with its own ``__dir__``, a class with a metaclass)."""
    if isinstance(pkg, type):
        if type(pkg) is not type:
            return None
        return tuple(tuple(vars(c)) for c in pkg.__mro__)
    names = getattr(pkg, "__dict__", None)
    if not isinstance(names, dict) or "__dir__" in names:
        return None
    return (tuple(names),)


def list_members_once() -> bool:
    """Each launch patches the builtins of ``triton.language``, its ``tensor`` class and
    ``math`` (``_patch_builtin``), listing every member with ``inspect.getmembers`` (sorted,
    ~0.45 ms a launch) to find them. This lists each module's or class's member names once
    per set of names and reads the members by those names: the same members, in the same
    order, patched the same way. Where a name cannot be read (or ``dir`` could list others),
    Triton's own listing runs. False where the interpreter lacks what this wraps."""
    interpreter = _interpreter()
    patch_builtin = getattr(interpreter, "_patch_builtin", None)
    patch_attr = getattr(interpreter, "_patch_attr", None)
    lang = getattr(interpreter, "tl", None)
    flag = getattr(getattr(lang, "core", None), "TRITON_BUILTIN", None)
    if getattr(patch_builtin, "_listed_once", False):  # installed already
        return True
    if patch_builtin is None or patch_attr is None or not isinstance(flag, str):
        return False
    listing: Callable[..., Any] = patch_builtin
    patch: Callable[..., Any] = patch_attr
    names: dict[tuple[int, tuple[tuple[str, ...], ...]], tuple[Any, list[str]]] = {}
    missing = object()

    def patch_builtins(pkg: Any, builder: Any, scope: Any) -> None:
        key = _names_key(pkg)
        if key is None:
            return listing(pkg, builder, scope)
        entry = names.get((id(pkg), key))
        if entry is None or entry[0] is not pkg:
            entry = (pkg, [name for name, _ in inspect.getmembers(pkg)])
            names[(id(pkg), key)] = entry
        members = [(name, getattr(pkg, name, missing)) for name in entry[1]]
        if any(member is missing for _, member in members):
            return listing(pkg, builder, scope)
        for name, member in members:
            if getattr(member, flag, False):  # tl.core.is_builtin
                patch(pkg, name, member, builder, scope)
        return None

    patch_builtins._listed_once = True  # type: ignore[attr-defined]
    patch_builtins._eg_original = listing  # type: ignore[attr-defined]
    setattr(interpreter, "_patch_builtin", patch_builtins)  # noqa: B010
    return True
