"""eaglegraph: diagnose and profile CUDA-graph capture in EAGLE speculative decoding.

The library is usable without the CLI. Heavy layers (torch, triton) load lazily, so importing
the package, or asking the CLI for help, stays fast on machines without a GPU.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = [
    "Rig",
    "RunSpec",
    "__version__",
    "load_pair",
    "load_run",
    "memdiff",
    "probe",
    "resolve_run",
]

_LAZY = {
    "load_pair": ("eaglegraph.pair", "load_pair"),
    "Rig": ("eaglegraph.rig.step", "Rig"),
    "probe": ("eaglegraph.probes.probing", "probe"),
    "memdiff": ("eaglegraph.probes.memdiff", "memdiff"),
    "RunSpec": ("eaglegraph.probes.spec", "RunSpec"),
    "resolve_run": ("eaglegraph.probes.spec", "resolve_run"),
    "load_run": ("eaglegraph.results", "load_run"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'eaglegraph' has no attribute {name!r}")
