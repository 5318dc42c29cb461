"""Result types of `eaglegraph triage` (eaglegraph.triage/1): plain dataclasses.

The terminal view and `--json` (schema `eaglegraph.triage/1`) are both made from one
`TriageResult`, so everything a renderer shows is computed here, in the library.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from eaglegraph.known.enums import StrEnum
from eaglegraph.known.triage_categories import CATEGORIES as CATEGORIES
from eaglegraph.known.triage_categories import Category as Category
from eaglegraph.results.findings import Finding
from eaglegraph.results.similar import SimilarReport

TRIAGE_SCHEMA = "eaglegraph.triage/1"


class Role(StrEnum):
    """What an evidence line is to the verdict."""

    PRIMARY = "primary"
    SECONDARY = "secondary"
    CONTEXT = "context"


class Phase(StrEnum):
    """Where in the engine's life the failure happened (`PhaseInfo.at_failure`)."""

    CAPTURE = "capture"
    SERVING = "serving"
    STARTUP = "startup"
    STUCK = "stuck"
    MEMORY_PROFILING = "memory-profiling"
    NONE = "none"
    UNKNOWN = "unknown"


@dataclass
class ModeChange:
    """A line where the framework changed the CUDA-graph mode it was asked for."""

    line: int
    from_mode: str | None
    to_mode: str | None
    reason: str


@dataclass
class CapturePhase:
    """One capture pass seen in the log (a progress bar or a begin/end pair)."""

    name: str
    mode: str | None = None
    begin_line: int = 0
    last_line: int = 0
    end_line: int | None = None
    done: int | None = None
    total: int | None = None
    finished: bool = False
    batch_size: int | None = None
    avail_mem_gb: float | None = None
    mem_usage_gb: float | None = None


@dataclass
class Acceptance:
    """Speculative-decoding health read from periodic metrics lines or a pasted table.

    `rate` values are fractions (0..1) of drafted tokens accepted; `mean_length` counts the
    bonus token, so 1.0 means no draft token was ever accepted.
    """

    samples: int = 0
    mean_length_first: float | None = None
    mean_length_last: float | None = None
    mean_length_min: float | None = None
    rate_first: float | None = None
    rate_last: float | None = None
    rate_min: float | None = None
    per_position_last: list[float] = field(default_factory=list)
    first_line: int | None = None
    last_line: int | None = None


@dataclass
class MemoryFacts:
    available_kv_gib: float | None = None
    kv_cache_tokens: int | None = None
    max_concurrency: float | None = None
    graph_estimate_gib: float | None = None
    graph_taken_gib: float | None = None
    gpu_memory_utilization: float | None = None
    mem_fraction_static: float | None = None


@dataclass
class Padding:
    """A padded-replay diagnostic line: the batch was padded up to a captured size."""

    line: int
    raw_bs: int
    graph_bs: int


@dataclass
class TriageConfig:
    """Serving configuration as far as the log tells it; None where it does not."""

    framework: str | None = None
    version: str | None = None
    runner: str | None = None
    target_model: str | None = None
    spec_method: str | None = None
    draft_model: str | None = None
    num_spec_tokens: int | None = None
    topk: int | None = None
    num_draft_tokens: int | None = None
    cudagraph_mode_requested: str | None = None
    cudagraph_mode_resolved: str | None = None
    mode_changes: list[ModeChange] = field(default_factory=list)
    capture_sizes: list[int] = field(default_factory=list)
    attention_backend: str | None = None
    attention_backend_raw: str | None = None
    decode_backend: str | None = None
    tp: int | None = None
    pp: int | None = None
    dp: int | None = None
    ep: int | None = None
    # Lower bounds read off rank names (TP3, dp_rank=1) when no launch argument gave the size.
    tp_at_least: int | None = None
    dp_at_least: int | None = None
    ep_at_least: int | None = None
    dp_attention: bool | None = None
    gpu: str | None = None
    gpu_arch: str | None = None
    gpu_memory_gib: float | None = None
    kv_cache_dtype: str | None = None
    quantization: str | None = None
    enforce_eager: bool | None = None
    disable_cuda_graph: bool | None = None
    max_num_seqs: int | None = None
    cuda_graph_max_bs: int | None = None
    expert_distribution_metrics: bool | None = None
    memory: MemoryFacts = field(default_factory=MemoryFacts)
    padding: Padding | None = None
    acceptance: Acceptance = field(default_factory=Acceptance)


@dataclass
class Evidence:
    """A log line that supports the diagnosis; `line` is 1-based in the input as given."""

    line: int
    text: str
    signal: str
    role: str
    category: str | None = None
    weight: float = 0.0


@dataclass
class Alternative:
    category: str
    score: float
    confidence: float


@dataclass
class Fix:
    """An upstream change whose mechanism matches the evidence."""

    ref: str
    summary: str
    why: str
    # "yes": the report's engine and version lie inside the fix's affected range;
    # "if-older": the version is unknown, the fix applies only below `fixed_in` (see `check`);
    # "related": the mechanism matches, but the releases it affects are not recorded.
    applies: str = "yes"
    fixed_in: str | None = None
    check: str | None = None


@dataclass
class PhaseInfo:
    """Where in the engine's life the failure happened."""

    at_failure: str
    detail: str | None = None
    captures: list[CapturePhase] = field(default_factory=list)
    captures_finished: bool | None = None


@dataclass
class Distributed:
    """A multi-rank failure: what kind of stop it is, and the first error across ranks."""

    kind: str  # "collective-wait" (all ranks wait), "kernel-spin" (one kernel never returns),
    # "peer-died" (a rank died, the others lost it), "rpc-timeout" (the engine lost a worker)
    signals: list[str] = field(default_factory=list)
    first_error: Evidence | None = None
    cascade: int = 0  # lines that follow from the first error (watchdogs, dead engine)
    next_step: str = ""


@dataclass
class TriageResult:
    source: str
    bytes_read: int
    lines: int
    framework: str | None
    version: str | None
    config: TriageConfig
    category: str
    confidence: float
    alternatives: list[Alternative]
    scores: dict[str, float]
    phase: PhaseInfo
    primary_error: Evidence | None
    secondary_errors: list[Evidence]
    evidence: list[Evidence]
    fixes: list[Fix]
    checks: list[str]
    reproduce: str | None
    reproduce_also: list[str]
    findings: list[Finding]
    notes: list[str]
    # Committed: evidence names the category (tier "named"), its kind is proven on reports no
    # rule was written for (known.triage_calibration) and its rate there reaches
    # known.triage_commit.COMMIT; otherwise the verdict is "not enough evidence" and `ask_for`
    # says what the report lacks.
    committed: bool = False
    tier: str = "nothing"
    ask_for: list[str] = field(default_factory=list)
    # The rules whose evidence names the category, and the one the confidence rests on (None
    # when none is proven on unseen reports).
    evidence_kinds: list[str] = field(default_factory=list)
    evidence_kind: str | None = None
    distributed: Distributed | None = None
    # The closest known public reports (known/data/reports), best first, with why they match.
    similar: list[SimilarReport] = field(default_factory=list)
