"""Crash-log triage: from a vLLM / SGLang / TensorRT-LLM log to a diagnosis.

Pure Python and fast (no torch, no GPU): `triage_path(LOG)` streams the log, strips line
prefixes, extracts configuration and capture phases, weighs failure signals into a category
with a confidence, and recommends checks, known fixes and a reproducing eaglegraph command.
"""

from __future__ import annotations

from typing import Any

__all__ = ["triage_bytes", "triage_path", "triage_text"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from eaglegraph.triage import diagnose

        return getattr(diagnose, name)
    raise AttributeError(f"module 'eaglegraph.triage' has no attribute {name!r}")
