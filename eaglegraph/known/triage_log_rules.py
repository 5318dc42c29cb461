"""What a log's own lines weigh, as data: each rule names the log facts it needs.

`eaglegraph.triage.facts` reads facts off the scanned log (`log.*`: a mechanism seen on a line,
a context such as padded replay or a stopped capture; `phase.*`: where the first root error
happened; `log.mech-*`: the mechanism of that error). These rules turn the facts into weight
for a failure class, the same way `triage_rules.RULES` does for a reporter's statements. The
reasoning they encode follows crash-triage.md:

- a specific mechanism decides on its own (an index assert is out-of-bounds, an OOM is memory,
  a shape error is a config mismatch), even during capture;
- an asynchronous fault is reported at the next sync point, so its phase and context decide:
  during capture it is a capture failure, in padded replay or after the batch shrank a stale
  read, pinned on an eagerly launched library kernel something else;
- a log with no error line is read for what it does show (mode resolution, acceptance, a
  stuck process).

A new signal takes three files: its line pattern (`triage_signals.SIGNALS`, plus its place in
`SECONDARY_SIGNALS` / `SPECIFIC` / `MECHANISMS` when it is a consequence or a root error), its
fact and weight here (`SIGNAL_FACTS`, `LOG_RULES`), and a test.
"""

from __future__ import annotations

from dataclasses import dataclass

from eaglegraph.known.triage_rules import (
    ACCEPT,
    CAPTURE,
    CONFIG,
    HANG,
    MODE,
    OOB,
    OOM,
    OTHER,
    STALE,
    Rule,
)


@dataclass(frozen=True)
class SignalFact:
    """A log fact that holds when any of `signals` has a hit; its first `keep` lines show it.

    `loud_only` drops hits at a level that makes the signal harmless (`triage_facts.QUIET`).
    Facts that need more than a hit (a phase, a threshold, a neighbouring line) are derived in
    `eaglegraph.triage.facts`.
    """

    fact: str
    signals: tuple[str, ...]
    keep: int = 1
    loud_only: bool = False


SIGNAL_FACTS: tuple[SignalFact, ...] = (
    SignalFact("log.index-oob", ("index.oob",)),
    SignalFact("log.device-assert", ("cuda.device-assert",)),
    SignalFact("log.oom", ("memory.oom",), loud_only=True),
    SignalFact("log.negative-estimate", ("memory.negative-estimate",)),
    SignalFact("log.shape", ("shape.mismatch",)),
    SignalFact("log.capture-unsupported", ("capture.unsupported",)),
    SignalFact("log.capture-wrapper", ("capture.failed",)),
    SignalFact("log.none-still-fails", ("context.none-still-fails",)),
    SignalFact("log.mode-downgrade", ("mode.downgrade",)),
    SignalFact("log.mode-override", ("mode.override",)),
    SignalFact("log.gibberish", ("health.gibberish",)),
    SignalFact("log.watchdog", ("hang.watchdog",)),
    SignalFact("log.stall", ("hang.stall",), loud_only=True),
    SignalFact("log.pyspy", ("pyspy.frame", "pyspy.thread"), keep=2),
    SignalFact("log.hang-prose", ("hang.narrative",)),
    SignalFact("ctx.launch-blocking", ("context.launch-blocking",)),
    SignalFact("ctx.mode-downgrade", ("mode.downgrade",)),
    SignalFact("log.peer-lost", ("secondary.peer-lost",)),
)

# The root error's mechanism is one of the specific ones (it decides its own class).
_SPECIFIC = ("log.mech-oom", "log.mech-shape", "log.mech-oob", "log.mech-config")
# Mechanisms whose class comes from the phase in which they happened.
_PHASE_BOUND = (
    "log.mech-async",
    "log.mech-assert",
    "log.mech-nan",
    "log.mech-hang",
    "log.mech-capture-wrapper",
    "log.mech-exception",
)

LOG_RULES: tuple[Rule, ...] = (
    # -- index asserts -----------------------------------------------------------------------
    Rule(
        "log-index-assert",
        OOB,
        3.0,
        needs=("log.index-oob",),
        why="device-side index assert / out-of-bounds index",
    ),
    Rule(
        "log-device-assert",
        OOB,
        1.2,
        needs=("log.device-assert",),
        unless=("log.index-oob",),
        why="device-side assert (in serving these are almost always index checks)",
    ),
    Rule(
        "log-position-key",
        OOB,
        1.0,
        needs=("log.position-key",),
        why="positions beyond the draft's max_position_embeddings",
    ),
    # -- memory ------------------------------------------------------------------------------
    Rule("log-oom", OOM, 3.0, needs=("log.oom",), why="allocation failure (CUDA OOM / KV budget)"),
    Rule(
        "log-negative-estimate",
        OOM,
        2.5,
        needs=("log.negative-estimate",),
        why="negative CUDA-graph memory estimate inflates the KV budget",
    ),
    Rule(
        "log-kv-squeezed",
        OOM,
        1.0,
        needs=("log.kv-squeezed",),
        why="KV cache squeezed below 1 GiB",
    ),
    # -- shapes and configs ------------------------------------------------------------------
    Rule("log-shape", CONFIG, 3.0, needs=("log.shape",), why="tensor shape mismatch"),
    Rule(
        "log-shape-width",
        CONFIG,
        0.5,
        needs=("log.shape-width",),
        why="the mismatching sizes look like widths or vocabularies",
    ),
    Rule(
        "log-config-key",
        CONFIG,
        2.5,
        needs=("log.config-key",),
        why="the error names a config key of the draft",
    ),
    # -- capture -----------------------------------------------------------------------------
    Rule(
        "log-capture-unsupported",
        CAPTURE,
        3.0,
        needs=("log.capture-unsupported",),
        why="an uncapturable operation ran during stream capture",
    ),
    Rule(
        "log-capture-wrapper",
        CAPTURE,
        2.0,
        needs=("log.capture-wrapper",),
        unless=_SPECIFIC,
        why="the engine reported a failed capture",
    ),
    Rule(
        "log-capture-wrapper-beside-mechanism",
        CAPTURE,
        0.5,
        needs=("log.capture-wrapper",),
        any_of=_SPECIFIC,
        why="the engine reported a failed capture, but the error names its own mechanism",
    ),
    Rule(
        "log-specific-during-capture",
        CAPTURE,
        0.5,
        needs=("phase.capture",),
        any_of=(*_SPECIFIC, "log.mech-capture"),
        why="failure during capture",
    ),
    Rule(
        "log-frames-through-capture",
        CAPTURE,
        1.5,
        needs=("log.capture-frames",),
        why="traceback runs through CUDA-graph capture (error line not in the log)",
    ),
    Rule(
        "log-fault-during-capture",
        CAPTURE,
        2.5,
        needs=("phase.capture",),
        any_of=_PHASE_BOUND,
        why="failure while capturing",
    ),
    Rule(
        "log-capture-wrapper-after-capture",
        CAPTURE,
        0.5,
        needs=("log.mech-capture-wrapper",),
        unless=("phase.capture",),
        why="capture failure reported",
    ),
    # -- asynchronous faults after capture -----------------------------------------------------
    Rule(
        "log-fault-in-padded-replay",
        STALE,
        2.5,
        needs=("log.fault-replay",),
        why="asynchronous fault during graph replay with padded/shrinking batches",
    ),
    Rule(
        "log-assert-in-padded-replay",
        OOB,
        0.5,
        needs=("log.fault-replay", "log.mech-assert"),
        why="device assert during padded replay",
    ),
    Rule(
        "log-fault-in-eager-kernel",
        OTHER,
        1.2,
        needs=("log.fault-eager-kernel",),
        why="fault attributed to an eagerly launched library kernel, no replay context",
    ),
    Rule(
        "log-fault-in-eager-kernel-stale",
        STALE,
        0.4,
        needs=("log.fault-eager-kernel",),
        why="async faults in spec decode with graphs are most often stale padded reads",
    ),
    Rule(
        "log-nan",
        OTHER,
        1.0,
        needs=("log.fault-nan",),
        why="non-finite values reached sampling",
    ),
    Rule(
        "log-nan-stale",
        STALE,
        0.5,
        needs=("log.fault-nan",),
        why="stale float buffers replayed by a graph produce NaN",
    ),
    Rule(
        "log-fault-while-serving",
        STALE,
        1.0,
        needs=("log.fault-bare", "phase.serving"),
        why="async fault after capture: most often a stale read of a padded graph buffer",
    ),
    Rule(
        "log-fault-elsewhere",
        STALE,
        0.8,
        needs=("log.fault-bare",),
        unless=("phase.serving",),
        why="async fault after capture: most often a stale read of a padded graph buffer",
    ),
    Rule(
        "log-fault-without-context",
        OTHER,
        0.5,
        needs=("log.fault-bare",),
        why="async fault without context",
    ),
    Rule(
        "log-padded-replay",
        STALE,
        2.0,
        needs=("log.padding", "log.failed"),
        why="padded replay (raw batch smaller than the captured one)",
    ),
    Rule(
        "log-padded-replay-no-failure",
        STALE,
        0.5,
        needs=("log.padding",),
        unless=("log.failed",),
        why="padded replay (raw batch smaller than the captured one)",
    ),
    Rule(
        "log-batch-shrink",
        STALE,
        1.0,
        needs=("log.shrink-fault",),
        why="running requests fell before the failure (batch shrink)",
    ),
    Rule(
        "log-serving-frames",
        STALE,
        0.6,
        needs=("log.serving-frames",),
        why="serving-time crash in the forward path, error line not in the log",
    ),
    Rule(
        "log-serving-frames-other",
        OTHER,
        0.3,
        needs=("log.serving-frames",),
        why="cause not in the log",
    ),
    Rule(
        "log-plain-exception",
        OTHER,
        1.0,
        needs=("log.mech-exception",),
        unless=("phase.capture",),
        why="an exception no graph mechanism explains",
    ),
    Rule(
        "log-none-still-fails",
        OTHER,
        1.5,
        needs=("log.none-still-fails",),
        why="fails with cudagraph_mode=NONE too: torch.compile/inductor, not graphs",
    ),
    # -- modes -------------------------------------------------------------------------------
    Rule(
        "log-mode-downgrade",
        MODE,
        1.2,
        needs=("log.mode-downgrade",),
        unless=("log.error",),
        why="the engine downgraded the requested CUDA-graph mode for spec decode",
    ),
    Rule(
        "log-mode-downgrade-beside-error",
        MODE,
        0.6,  # beside a crash, a downgrade is context
        needs=("log.mode-downgrade", "log.error"),
        why="the engine downgraded the requested CUDA-graph mode for spec decode",
    ),
    Rule(
        "log-mode-override",
        MODE,
        1.0,
        needs=("log.mode-override",),
        why="cudagraph_mode overridden",
    ),
    Rule(
        "log-mode-refused",
        MODE,
        2.5,
        needs=("log.mode-refused",),
        why="a graph mode the backend or draft cannot run",
    ),
    Rule(
        "log-mode-soft",
        MODE,
        0.6,
        needs=("log.mode-soft",),
        why="graphs disabled or unsupported for part of the model",
    ),
    Rule(
        "log-mode-info-only",
        MODE,
        0.6,
        needs=("log.mode-info-only",),
        why="no failure in the log; what it shows is how graphs were resolved",
    ),
    Rule(
        "log-mode-changed",
        MODE,
        0.4,
        needs=("log.mode-changed",),
        why="the mode that ran is not the one requested",
    ),
    # -- acceptance --------------------------------------------------------------------------
    Rule(
        "log-acceptance-collapsed",
        ACCEPT,
        3.0,
        needs=("log.acceptance-collapsed",),
        why="acceptance near zero",
    ),
    Rule(
        "log-acceptance-healthy-elsewhere",
        ACCEPT,
        0.5,
        needs=("log.acceptance-healthy-elsewhere",),
        why="healthy acceptance in another configuration of the same model",
    ),
    Rule(
        "log-acceptance-fell",
        ACCEPT,
        2.0,
        needs=("log.acceptance-fell",),
        why="acceptance fell during the run",
    ),
    Rule(
        "log-gibberish",
        ACCEPT,
        0.8,
        needs=("log.gibberish",),
        why="reporter describes garbage drafts/outputs",
    ),
    # -- hangs -------------------------------------------------------------------------------
    Rule(
        "log-watchdog",
        HANG,
        3.0,
        needs=("log.watchdog",),
        why="the engine watchdog fired: a step never returned",
    ),
    Rule("log-stall", HANG, 2.5, needs=("log.stall",), why="a process stopped making progress"),
    Rule(
        "log-peer-lost-alone",
        OTHER,
        1.5,
        needs=("log.peer-lost",),
        unless=("log.error",),
        why="only a survivor's lost connection to a peer rank: the peer died first, and its "
        "error is in its own log (collect every rank's log)",
    ),
    Rule(
        "log-collective-timeout",
        HANG,
        2.0,
        needs=("log.nccl-timeout-alone",),
        why="collective timed out and no other error explains it",
    ),
    Rule(
        "log-stack-dump",
        HANG,
        2.5,
        needs=("log.pyspy",),
        unless=("log.error",),
        why="stack dump of a live process (py-spy): it was stuck",
    ),
    Rule(
        "log-hang-prose",
        HANG,
        1.0,
        needs=("log.hang-prose",),
        unless=("log.error",),
        why="reporter describes a hang",
    ),
    Rule(
        "log-hang-prose-beside-error",
        HANG,
        0.4,
        needs=("log.hang-prose", "log.error"),
        why="reporter describes a hang",
    ),
    Rule(
        "log-capture-stopped",
        HANG,
        1.0,
        needs=("log.capture-stopped",),
        why="the log stops in the middle of a capture",
    ),
    Rule(
        "log-capture-stopped-capture",
        CAPTURE,
        0.8,
        needs=("log.capture-stopped",),
        why="capture never finished",
    ),
)
