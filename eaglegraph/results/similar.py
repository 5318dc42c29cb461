"""A known public report that resembles the one being triaged, and why (eaglegraph.triage/1).

Made by `triage.similar` from the knowledge base in `known/data/reports/`; the terminal view,
`--json`, the explorer and the HTML page show it as computed here.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(kw_only=True)
class SimilarReport:
    id: str
    score: float
    title: str
    # The signature terms both logs contain, most telling first (error names, kernels, files).
    shared_terms: list[str] = field(default_factory=list)
    url: str
    # The configuration facts both state ("engine vllm", "method eagle3", "version 0.10 ~ 0.11").
    shared_facts: list[str] = field(default_factory=list)
    engine: str
    version: str | None = None
    category: str
    root_cause: str | None = None
    fix: str | None = None
