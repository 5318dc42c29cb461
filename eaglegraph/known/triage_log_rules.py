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
    none_of,
    one_of,
    rule_table,
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
    SignalFact("log.pool-leak", ("memory.pool-leak",)),
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
    SignalFact("log.draft-load", ("load.draft-weights",)),
    SignalFact("log.k-limit", ("spec.k-limit",)),
    SignalFact("log.spec-refused", ("spec.refused",)),
    SignalFact("log.graph-size", ("shape.graph-size",)),
    SignalFact("log.engine-kernel", ("kernel.engine",)),
)

# The root error's mechanism is one of the specific ones (it decides its own class).
_SPECIFIC = (
    "log.mech-oom",
    "log.mech-shape",
    "log.mech-oob",
    "log.mech-config",
    "log.mech-load",
    "log.mech-k-limit",
    "log.mech-graph-size",
    "log.mech-kernel",
)
# Mechanisms whose class comes from the phase in which they happened.
_PHASE_BOUND = (
    "log.mech-async",
    "log.mech-assert",
    "log.mech-nan",
    "log.mech-hang",
    "log.mech-capture-wrapper",
    "log.mech-exception",
)

LOG_RULES: tuple[Rule, ...] = rule_table(
    # -- index asserts -----------------------------------------------------------------------
    ("log-index-assert", OOB, 3.0, "log.index-oob"),
    "device-side index assert / out-of-bounds index",
    ("log-device-assert", OOB, 1.2, "log.device-assert !log.index-oob"),
    "device-side assert (in serving these are almost always index checks)",
    ("log-copy-overflow", OOB, 3.0, "log.copy-overflow"),
    "a longer array copied into a fixed host buffer (numpy 'could not broadcast input array "
    "from shape (513,) into shape (512,)'): a token count past the buffer's end",
    ("log-position-key", OOB, 1.0, "log.position-key"),
    "positions beyond the draft's max_position_embeddings",
    # -- memory ------------------------------------------------------------------------------
    ("log-oom", OOM, 3.0, "log.oom"),
    "allocation failure (CUDA OOM / KV budget)",
    ("log-pool-leak", OOM, 3.0, "log.pool-leak"),
    "the KV pool's own accounting asserts that slots leaked: pool memory, not a kernel's fault",
    ("log-negative-estimate", OOM, 2.5, "log.negative-estimate"),
    "negative CUDA-graph memory estimate inflates the KV budget",
    ("log-kv-squeezed", OOM, 1.0, "log.kv-squeezed"),
    "KV cache squeezed below 1 GiB",
    # -- shapes and configs ------------------------------------------------------------------
    ("log-shape", CONFIG, 3.0, "log.shape log.shape-sized"),
    "tensor shape mismatch whose sizes are widths or vocabularies",
    ("log-shape-unsized", CONFIG, 3.0, "log.shape !log.shape-sized !log.shape-tokens"),
    "tensor shape mismatch whose sizes say neither width nor token count: most are widths, "
    "but only sizes of a width's kind name the class (vllm#44304's symbolic token lengths)",
    ("log-shape-tokens", OTHER, 1.0, "log.shape-tokens !phase.capture"),
    "a shape error over a token count, not a width: two counts of the step's tokens disagree "
    "(bookkeeping); torch raises it before any kernel reads a buffer, so it is no stale read",
    ("log-shape-tokens-capture", CAPTURE, 2.5, "log.shape-tokens phase.capture"),
    "a shape error over a token count while capturing",
    ("log-draft-load", CONFIG, 3.0, "log.draft-load"),
    "the draft's weights do not load into the module built for it",
    ("log-k-limit", MODE, 3.0, "log.k-limit"),
    "a kernel or graph mode that supports only some numbers of speculative tokens",
    ("log-spec-refused", MODE, 3.0, "log.spec-refused !log.draft-load"),
    "the engine refuses speculative decoding with this platform, backend or feature",
    ("log-graph-size-capture", CAPTURE, 3.0, "log.graph-size phase.capture"),
    "a compiled graph's size guard failed while capturing",
    ("log-graph-size", STALE, 1.5, "log.graph-size !phase.capture"),
    "a compiled graph's size guard failed in serving: the padded batch and the graph's size "
    "disagree",
    ("log-engine-kernel", OTHER, 3.0, "log.engine-kernel"),
    "the fault is inside an engine kernel (TRT-LLM GEMM, FlashAttention-3) that graphs do not "
    "explain",
    ("log-shape-width", CONFIG, 0.5, "log.shape-width"),
    "the mismatching sizes look like widths or vocabularies",
    ("log-config-key", CONFIG, 2.5, "log.config-key"),
    "the error names a config key of the draft",
    # -- capture -----------------------------------------------------------------------------
    ("log-capture-unsupported", CAPTURE, 3.0, "log.capture-unsupported"),
    "an uncapturable operation ran during stream capture",
    ("log-capture-wrapper", CAPTURE, 2.0, f"log.capture-wrapper {none_of(*_SPECIFIC)}"),
    "the engine reported a failed capture",
    (
        "log-capture-wrapper-beside-mechanism",
        CAPTURE,
        0.5,
        f"log.capture-wrapper {one_of(*_SPECIFIC)}",
    ),
    "the engine reported a failed capture, but the error names its own mechanism",
    (
        "log-specific-during-capture",
        CAPTURE,
        0.5,
        f"phase.capture {one_of(*_SPECIFIC)} ?log.mech-capture",
    ),
    "failure during capture",
    ("log-frames-through-capture", CAPTURE, 1.5, "log.capture-frames"),
    "traceback runs through CUDA-graph capture (error line not in the log)",
    ("log-fault-during-capture", CAPTURE, 2.5, f"phase.capture {one_of(*_PHASE_BOUND)}"),
    "failure while capturing",
    ("log-capture-wrapper-after-capture", CAPTURE, 0.5, "log.mech-capture-wrapper !phase.capture"),
    "capture failure reported",
    # -- asynchronous faults after capture -----------------------------------------------------
    ("log-fault-in-padded-replay", STALE, 2.5, "log.fault-replay"),
    "asynchronous fault during graph replay with padded/shrinking batches",
    ("log-assert-in-padded-replay", OOB, 0.5, "log.fault-replay log.mech-assert"),
    "device assert during padded replay",
    ("log-fault-in-eager-kernel", OTHER, 1.2, "log.fault-eager-kernel"),
    "fault attributed to an eagerly launched library kernel, no replay context",
    ("log-fault-in-eager-kernel-stale", STALE, 0.4, "log.fault-eager-kernel"),
    "async faults in spec decode with graphs are most often stale padded reads",
    ("log-nan", OTHER, 1.0, "log.fault-nan"),
    "non-finite values reached sampling",
    ("log-nan-stale", STALE, 0.5, "log.fault-nan"),
    "stale float buffers replayed by a graph produce NaN",
    ("log-fault-while-serving", STALE, 1.0, "log.fault-bare phase.serving"),
    "async fault after capture: most often a stale read of a padded graph buffer",
    ("log-fault-elsewhere", STALE, 0.8, "log.fault-bare !phase.serving"),
    "async fault after capture: most often a stale read of a padded graph buffer",
    ("log-fault-without-context", OTHER, 0.5, "log.fault-bare"),
    "async fault without context",
    ("log-padded-replay", STALE, 2.0, "log.padding log.failed"),
    "padded replay (raw batch smaller than the captured one)",
    ("log-padded-replay-no-failure", STALE, 0.5, "log.padding !log.failed"),
    "padded replay (raw batch smaller than the captured one)",
    ("log-batch-shrink", STALE, 1.0, "log.shrink-fault"),
    "running requests fell before the failure (batch shrink)",
    ("log-serving-frames", STALE, 0.6, "log.serving-frames"),
    "serving-time crash in the forward path, error line not in the log",
    ("log-serving-frames-other", OTHER, 0.3, "log.serving-frames"),
    "cause not in the log",
    ("log-plain-exception", OTHER, 1.0, "log.mech-exception !phase.capture"),
    "an exception no graph mechanism explains",
    ("log-none-still-fails", OTHER, 1.5, "log.none-still-fails"),
    "fails with cudagraph_mode=NONE too: torch.compile/inductor, not graphs",
    # -- modes -------------------------------------------------------------------------------
    ("log-mode-downgrade", MODE, 1.2, "log.mode-downgrade !log.error"),
    "the engine downgraded the requested CUDA-graph mode for spec decode",
    # beside a crash, a downgrade is context
    ("log-mode-downgrade-beside-error", MODE, 0.6, "log.mode-downgrade log.error"),
    "the engine downgraded the requested CUDA-graph mode for spec decode",
    ("log-mode-override", MODE, 1.0, "log.mode-override"),
    "cudagraph_mode overridden",
    ("log-mode-refused", MODE, 2.5, "log.mode-refused"),
    "a graph mode the backend or draft cannot run",
    ("log-mode-soft", MODE, 0.6, "log.mode-soft"),
    "graphs disabled or unsupported for part of the model",
    ("log-mode-info-only", MODE, 0.6, "log.mode-info-only"),
    "no failure in the log; what it shows is how graphs were resolved",
    ("log-mode-changed", MODE, 0.4, "log.mode-changed"),
    "the mode that ran is not the one requested",
    # -- acceptance --------------------------------------------------------------------------
    ("log-acceptance-collapsed", ACCEPT, 3.0, "log.acceptance-collapsed"),
    "acceptance near zero",
    ("log-acceptance-healthy-elsewhere", ACCEPT, 0.5, "log.acceptance-healthy-elsewhere"),
    "healthy acceptance in another configuration of the same model",
    ("log-acceptance-fell", ACCEPT, 2.0, "log.acceptance-fell"),
    "acceptance fell during the run",
    ("log-gibberish", ACCEPT, 0.8, "log.gibberish"),
    "reporter describes garbage drafts/outputs",
    # -- hangs -------------------------------------------------------------------------------
    ("log-watchdog", HANG, 3.0, "log.watchdog"),
    "the engine watchdog fired: a step never returned",
    ("log-stall", HANG, 2.5, "log.stall"),
    "a process stopped making progress",
    ("log-peer-lost-alone", OTHER, 1.5, "log.peer-lost !log.error"),
    "only a survivor's lost connection to a peer rank: the peer died first, and its "
    "error is in its own log (collect every rank's log)",
    ("log-collective-timeout", HANG, 2.0, "log.nccl-timeout-alone"),
    "collective timed out and no other error explains it",
    ("log-stack-dump", HANG, 2.5, "log.pyspy !log.error"),
    "stack dump of a live process (py-spy): it was stuck",
    ("log-hang-prose", HANG, 1.0, "log.hang-prose !log.error"),
    "reporter describes a hang",
    ("log-hang-prose-beside-error", HANG, 0.4, "log.hang-prose log.error"),
    "reporter describes a hang",
    ("log-capture-stopped", HANG, 1.0, "log.capture-stopped"),
    "the log stops in the middle of a capture",
    ("log-capture-stopped-capture", CAPTURE, 0.8, "log.capture-stopped"),
    "capture never finished",
)
