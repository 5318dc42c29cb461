"""DP agreement runs: what each rank chose in each phase of each step, and where they differ.

One `RankStep` per rank and step records the DP collectives the rank issued (with its row, as
the engine builds it) and the local dispatch it took from the agreed values in every phase;
a `DpStep` holds all ranks' and the findings of comparing them; a `DpRun` is a named scenario
or a seeded exploration under one profile.
"""

from __future__ import annotations

from dataclasses import dataclass

from eaglegraph.results.findings import Finding

DP_SCHEMA = "eaglegraph.dp/1"

EAGER = "eager"


@dataclass(frozen=True)
class PhaseChoice:
    """One rank's dispatch of one forward: a graph (its mode and size) or eager.

    `size` is the graph's key (tokens for vLLM, the batch size for SGLang, `unit` says which),
    0 when eager; `padded` is the token count the forward runs at. `bound` says whether this
    phase's collectives pair across DP ranks by shape (MoE all-to-all with fixed geometry, DP
    gathers), so ranks must agree on the graph; `index` numbers draft decodes from 1.
    """

    phase: str
    graph: str  # "FULL", "PIECEWISE" or "eager"
    tokens: int
    padded: int
    size: int = 0
    unit: str = "tokens"
    index: int = 0
    bound: bool = True

    @property
    def label(self) -> str:
        return f"{self.phase} {self.index}" if self.index else self.phase

    @property
    def eager(self) -> bool:
        return self.graph == EAGER

    @property
    def key(self) -> str:
        """'FULL(bs 4)', 'PIECEWISE(16)' or 'eager'."""
        if self.eager:
            return EAGER
        return (
            f"{self.graph}(bs {self.size})" if self.unit == "bs" else f"{self.graph}({self.size})"
        )

    def describe(self, plural: bool = False) -> str:
        """'replays FULL(bs 4)' or 'runs eager (5 tokens)'; `plural` for a group of ranks."""
        if self.eager:
            tokens = f"{self.padded} token{'' if self.padded == 1 else 's'}"
            return f"{'run' if plural else 'runs'} eager ({tokens})"
        text = f"{'replay' if plural else 'replays'} {self.key}"
        return text if self.padded == self.size or self.unit == "bs" else f"{text} at {self.padded}"


@dataclass(frozen=True)
class SyncRecord:
    """One DP agreement collective a rank issued: its tag and the row it contributed."""

    tag: str
    row: tuple[int, ...]
    matched: bool  # every rank issued this same collective in this round


@dataclass(frozen=True)
class RankStep:
    """One rank's step: its batch, the DP collectives it issued, its forwards' dispatch."""

    rank: int
    batch: str
    syncs: tuple[SyncRecord, ...]
    phases: tuple[PhaseChoice, ...]
    draft_steps: int

    def phase(self, label: str) -> PhaseChoice | None:
        return next((p for p in self.phases if p.label == label), None)


@dataclass(frozen=True)
class DpStep:
    index: int
    ranks: tuple[RankStep, ...]
    findings: tuple[Finding, ...] = ()


@dataclass(frozen=True)
class DpRun:
    """A DP scenario or exploration under one profile, with the rule it ran and its verdict.

    `expect` is what the scenario's data says this profile should do ("diverges", "clean") or
    None (an exploration, or a profile the scenario does not name).
    """

    engine: str
    profile: str
    rule: str
    rule_source: str
    rows: tuple[str, ...]
    runner: str | None
    dp_size: int
    steps: tuple[DpStep, ...]
    hazards: tuple[str, ...] = ()  # the DP hazards the profile still has
    scenario: str | None = None
    summary: str = ""
    refs: tuple[str, ...] = ()
    seed: int | None = None
    expect: str | None = None

    @property
    def findings(self) -> tuple[Finding, ...]:
        return tuple(f for s in self.steps for f in s.findings)

    @property
    def verdict(self) -> str:
        return "diverges" if self.findings else "clean"

    @property
    def as_expected(self) -> bool | None:
        return None if self.expect is None else self.expect == self.verdict

    def to_json(self) -> dict[str, object]:
        fields = {k: getattr(self, k) for k in self.__dataclass_fields__}
        return {**fields, "verdict": self.verdict, "as_expected": self.as_expected}
