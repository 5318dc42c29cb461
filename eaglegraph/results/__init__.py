"""Results: every run type as plain, versioned, JSON-serialisable data.

One module per run kind (capture, memdiff, probe, triage, env, stacks, inspect), the pool
identity (`pools`), findings, one decoder (`codec`) and one schema registry and loader
(`registry`). Everything above may import this package; it imports nothing above it, so a
renderer needs only results to show a run, live or loaded from disk.
"""

from __future__ import annotations

from eaglegraph.results.registry import (
    SCHEMAS,
    Run,
    document,
    load_run,
    run_from_document,
    schema_of,
)

__all__ = ["SCHEMAS", "Run", "document", "load_run", "run_from_document", "schema_of"]
