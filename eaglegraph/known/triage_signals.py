"""Failure signals as data: the line forms each failure mechanism leaves in a log.

Patterns here describe mechanisms, not particular reports: the CUDA runtime's own words for an
asynchronous fault, PyTorch's device-side index asserts, the allocator's OOM message, the CUDA
stream-capture error family, shape errors, watchdogs, and the wrapper lines engines print after
a worker died. `eaglegraph.triage.signals` turns each row into a line pattern that records a
hit of its id; what a hit *means* is decided by the tables below (which signals may be a root
error, in which order, with which mechanism) and by `triage_log_rules` (what it weighs).

Each hit is recorded with a *kind* (`SignalKind`):

- `error`: a candidate root error (the first one is usually the primary error);
- `secondary`: a consequence or wrapper (NCCL watchdog, engine death, "Scheduler hit an
  exception", a peer's closed connection), never the primary error while a root error exists;
- `context`: facts that move the verdict (padding line, mode downgrade, traceback structure);
- `narrative`: reporter prose (pasted reports are small and read whole; in a big log, prose
  only counts where it is read: head, tail, samples and windows around failures).

`anchors` name machine-written text, `extra` reporter prose, command lines and metrics; both
gate the regex (at least one occurs in every line it can match, see `triage.patterns`).
"""

from __future__ import annotations

from dataclasses import dataclass

from eaglegraph.known.enums import StrEnum
from eaglegraph.known.upstream import cite


class SignalKind(StrEnum):
    ERROR = "error"
    SECONDARY = "secondary"
    CONTEXT = "context"
    NARRATIVE = "narrative"


class Mechanism(StrEnum):
    """How the primary error failed; the log rules weigh `log.mech-<value>`."""

    OOB = "oob"
    OOM = "oom"
    SHAPE = "shape"
    CAPTURE = "capture"
    ASYNC = "async"
    ASSERT = "assert"
    CONFIG = "config"
    NAN = "nan"
    HANG = "hang"
    CAPTURE_WRAPPER = "capture-wrapper"
    EXCEPTION = "exception"
    LOAD = "load"
    K_LIMIT = "k-limit"
    GRAPH_SIZE = "graph-size"
    KERNEL = "kernel"


ERROR, SECONDARY, CONTEXT, NARRATIVE = SignalKind


@dataclass(frozen=True)
class SignalSpec:
    """One line pattern whose every match is recorded as a hit of `id`."""

    id: str
    kind: SignalKind
    regex: str
    anchors: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    unless: tuple[str, ...] = ()
    why: str = ""
    # literals one of which every match of `regex` holds (lower case for a `(?i)` regex):
    # a line without any is not searched (`triage.patterns.LinePattern.may_match`)
    requires: tuple[str, ...] = ()


def alternatives(words: str) -> tuple[str, ...]:
    """Literal anchors written as one `a|b|c` string, the way the regexes list alternatives."""
    return tuple(words.split("|"))


ERR = ("Error", "ERROR", "CUDA")
_OK = (
    r"(?:works?|worked|fine|ok|goes away|went away|disappears?|vanish(?:es)?|avoids?|fix(?:es|ed)?|"
    r"solves?|resolves?|no (?:crash|error|issue)s?|does(?:n't| not) (?:crash|happen|reproduce))"
)
_NO_GRAPH = r"(?:(?:--)?enforce[-_]eager|--disable-cuda-graph|disable_cuda_graph|cudagraph_mode[\"':= ]+NONE)"

SIGNALS: tuple[SignalSpec, ...] = (
    # --- asynchronous CUDA faults: reported at the next sync point, location unreliable ----------
    SignalSpec(
        "cuda.illegal-address",
        ERROR,
        r"illegal memory access|cudaErrorIllegalAddress|CUDA_ERROR_ILLEGAL_ADDRESS|illegal address",
        anchors=ERR,
        extra=("illegal",),
        why="async fault: a kernel read or wrote outside any allocation",
    ),
    SignalSpec(
        "cuda.misaligned",
        ERROR,
        r"misaligned address|cudaErrorMisalignedAddress|CUDA_ERROR_MISALIGNED_ADDRESS",
        anchors=ERR,
        why="async fault: a kernel used a pointer that is not aligned, often a garbage index",
    ),
    SignalSpec(
        "cuda.launch-failure",
        ERROR,
        r"unspecified launch failure|cudaErrorLaunchFailure|CUDA_ERROR_LAUNCH_FAILED|"
        r"illegal instruction was encountered|cudaErrorIllegalInstruction|CUDA_ERROR_ILLEGAL_INSTRUCTION",
        anchors=ERR,
        why="async fault without an address",
    ),
    SignalSpec(
        "error.segfault",
        ERROR,
        r"Segmentation fault|SIGSEGV|[Ss]egfault|Fatal Python error: Segmentation|signal 11\b|"
        r"SIGBUS|Bus error|SIGILL",
        anchors=("Segmentation", "SIGSEGV", "SIGBUS", "SIGILL", "Bus error", "Fatal Python"),
        extra=("segfault", "signal 11"),
        why="host crash, typically a kernel launched with a bad pointer or a driver fault",
    ),
    # --- device-side asserts: the kernel checked an index itself ----------------------------------
    SignalSpec(
        "index.oob",
        ERROR,
        r"index out of bounds|out of bounds for (?:dimension|axis)|Out Of Bound|IndexKernel\.cu|"
        r"vectorized_gather_kernel|index_select_out_cuda|srcIndex < srcSelectDimSize|"
        r"ScatterGatherKernel\.cu|idx_dim >= 0 && idx_dim < index_size|index -?\d+ is out of bounds|"
        r"(?<!list )(?<!tuple )(?<!string )(?<!range object )index out of range|out of range in self|"
        r"indices? (?:are |is )?out of (?:bounds|range)|"
        # TensorRT's own bound check ("ISliceLayer has out of bounds access on axis 0").
        r"out of bounds (?:access|read|write)\b",
        anchors=(*ERR, "` failed", "Bound"),
        extra=("out of bounds", "out of range"),
        why="a gather/scatter index fell outside its tensor (device assert or IndexError)",
    ),
    SignalSpec(
        "cuda.device-assert",
        ERROR,
        r"device-side assert(?:ion)? triggered|cudaErrorAssert|CUDA_ERROR_ASSERT|Assertion `[^`]*` failed",
        anchors=(*ERR, "` failed"),
        why="a kernel assertion fired; most device asserts in serving are index checks",
    ),
    # --- memory --------------------------------------------------------------------------------
    SignalSpec(
        "memory.oom",
        ERROR,
        r"CUDA out of memory|OutOfMemoryError|out of memory|cudaErrorMemoryAllocation|"
        r"CUDA_ERROR_OUT_OF_MEMORY|Failed to allocate (?:memory|\d)|"
        r"No available memory for the cache blocks|larger than the available KV cache memory|"
        r"(?:[Ii]nsufficient|[Nn]ot enough) (?:GPU |device |free )?memory|OOM (?:when|while|during)",
        anchors=ERR,
        extra=("memory", "OOM"),
        why="the allocator could not satisfy a request (capture pools, KV cache, activations)",
    ),
    SignalSpec(
        "memory.negative-estimate",
        ERROR,
        r"(?:Estimated CUDA graph memory|CUDA graph memory estimated as|CUDA graph memory estimation)"
        r"[^\n\d-]{0,20}-\d|Graph capturing finished in [\d.]+ secs?, took -\d|"
        r"[Nn]egative CUDA graph memory",
        anchors=("CUDA", "Graph"),
        why="a negative graph-memory estimate inflates the KV budget "
        f"({cite('vllm-negative-graph-memory-estimate').ref})",
    ),
    SignalSpec(
        "memory.pool-leak",
        ERROR,
        r"(?:SWA )?(?:Pool )?Mem(?:ory)? Leak Detected",
        anchors=("Leak",),
        why="SGLang's KV pool counts its free and used slots after a step and asserts when "
        "they no longer add up: the pool's accounting, not a kernel, lost the slots",
    ),
    # --- capture ---------------------------------------------------------------------------------
    SignalSpec(
        "capture.unsupported",
        ERROR,
        r"operation not permitted when stream is capturing|cudaErrorStreamCapture\w+|"
        r"CUDA_ERROR_STREAM_CAPTURE_\w+|operation failed due to a previous error during capture|"
        r"not (?:permitted|allowed|supported) (?:during|while|when) (?:CUDA ?graph |stream )?captur\w+|"
        r"captures_underway|during CUDA graph capture|capture (?:was |is )?invalidated",
        anchors=ERR,
        extra=("captur",),
        why="an operation that cannot be recorded (host sync, allocation, .item()) ran inside capture",
    ),
    SignalSpec(
        "capture.failed",
        ERROR,
        r"Capture (?:cuda|CUDA) graph failed|CUDA graph capture failed|"
        r"[Ff]ailed to capture (?:the )?(?:(?:cuda|CUDA) ?)?graph|Failed to capture",
        anchors=("Capture", "CUDA", "Failed to capture"),
        why="the engine's own capture wrapper; the text after it is the real cause",
    ),
    # --- shapes and configs ---------------------------------------------------------------------
    SignalSpec(
        "shape.mismatch",
        ERROR,
        r"size of tensor a \((?P<a>\d+)\) must match the size of tensor b \((?P<b>\d+)\)|"
        r"expanded size of the tensor \(\d+\) must match the existing size \(\d+\)|"
        r"mat1 and mat2 shapes cannot be multiplied \((?P<m1>\d+x\d+) and (?P<m2>\d+x\d+)\)|"
        r"size mismatch for (?P<param>[\w.]+)|copying a param with shape|"
        r"shape '\[[\d, -]*\]' is invalid for input of size \d+|[Ss]izes? of tensors must match|"
        r"[Ee]xpected (?:size|shape|hidden[_ ]size)[^\n]{0,80}(?:got|but)|[Ss]hape mismatch|"
        r"dimension mismatch|must have the same shape|"
        r"(?:hidden|vocab|embed)\w* (?:size |dim\w* |width )?mismatch|"
        r"assert [\w.]+\.shape\[[^\]]*\]\s*==\s*[\w.]+\.shape\[",
        anchors=(*ERR, "Size(["),
        extra=("mismatch", "shape", "assert "),
        why="two tensors disagree on a dimension: draft and target widths or vocabularies",
    ),
    SignalSpec(
        "config.keys",
        ERROR,
        r"^(?=.*?(?:Error|ERROR|[Aa]ssert)).*?\b(?P<key>target_hidden_size|draft_vocab_size|hidden_size|"
        r"vocab_size|eagle_aux_hidden_state_layer_ids|aux_hidden_state\w*|d2t|t2d|hidden_dim|embed_dim|"
        r"lm_head|fc\.weight|max_position_embeddings|num_hidden_layers|head_dim|eagle_config)\b",
        anchors=("Error", "ERROR"),
        why="an error that names a draft/target config key",
    ),
    SignalSpec(
        "error.nan",
        ERROR,
        r"probability tensor contains either `?inf`?, `?nan`? or element < 0|"
        r"NaN (?:or Inf )?(?:values? )?(?:found|detected)|contains? NaN",
        anchors=ERR,
        extra=("NaN",),
        why="non-finite values reached sampling: often stale float buffers replayed by a graph",
    ),
    SignalSpec(
        "error.exception",
        ERROR,
        r"^\s*(?:[\w.]+\.)?(?P<etype>[A-Z]\w*(?:Error|Exception))(?::\s*(?P<msg>.*))?$",
        anchors=("Error", "xception"),
        why="a Python exception line",
    ),
    # --- consequences and wrappers ---------------------------------------------------------------
    SignalSpec(
        "secondary.abort",
        SECONDARY,
        r"Fatal Python error: Aborted|Aborted \(core dumped\)|SIGABRT|terminate called after throwing|"
        r"what\(\):",
        anchors=("bort", "SIGABRT", "Fatal Python", "what():"),
        extra=("terminate called",),
    ),
    SignalSpec(
        "secondary.nccl-timeout",
        SECONDARY,
        r"Watchdog caught collective operation timeout|collective operation timeout|"
        r"ProcessGroupNCCL[^\n]{0,300}?(?:[Tt]imeout|timed out|[Ww]atchdog)|Heartbeat monitor timed out|"
        r"[Ww]atchdog (?:got stuck|thread terminated)|NCCL (?:communicator was aborted|timeout|watchdog)|"
        r"Some NCCL operations have failed or timed out|ncclCommWatchdog",
        anchors=("Watchdog", "watchdog", "CCL", "Heartbeat"),
        why="NCCL's watchdog fires when a peer rank stopped participating, usually after it crashed",
    ),
    SignalSpec(
        "secondary.nccl-error",
        SECONDARY,
        r"NCCL error|ncclUnhandledCudaError|ncclSystemError|ncclInternalError|ncclInvalidUsage|"
        r"ncclRemoteError|NCCL WARN",
        anchors=("CCL", "Error"),
    ),
    SignalSpec(
        "secondary.engine",
        SECONDARY,
        r"EngineDeadError|EngineCore encountered (?:a fatal error|an issue)|Engine core proc [^\n]{0,200}?died|"
        r"Engine core initialization failed|EngineCore failed to start|Worker proc [^\n]{0,200}?died|"
        r"WorkerProc [^\n]{0,200}?(?:died|failed)|Worker failed with error|Exception in worker|"
        r"AsyncEngineDeadError|Background loop has errored|Engine loop has died|ActorDiedError|"
        r"RayTaskError|Child process unexpectedly failed|Received sigquit from a child process|"
        r"(?:Scheduler|TokenizerManager|DataParallelController|Detokenizer\w*) hit an exception|"
        r"\bKilled\b|exit ?code[ =:]+-?\d+|exited with (?:code|status)",
        anchors=alternatives(
            "EngineDead|EngineCore encountered|EngineCore failed|Engine core|Engine loop|"
            "Error|ERROR|Worker failed|Worker proc|WorkerProc|xception|Child process|Killed|"
            "Received sigquit|Background loop"
        ),
        extra=("exit code", "exitcode", "exited with"),
        why="the engine reporting that a worker died; the cause is earlier",
    ),
    SignalSpec(
        "secondary.peer-lost",
        SECONDARY,
        r"Connection (?:closed|reset) by peer",
        anchors=("by peer",),
        why="a surviving rank's collective (Gloo, TCPStore) lost its peer: the peer died of its "
        "own error, which is the root cause (the Gloo cascade after an illegal memory access)",
    ),
    # --- hangs -----------------------------------------------------------------------------------
    SignalSpec(
        "hang.watchdog",
        ERROR,
        r"[Ss]cheduler watchdog|[Ww]atchdog timeout|soft watchdog|watchdog_timeout=\d",
        anchors=("watchdog", "Watchdog"),
        why="the engine's own watchdog: a forward step did not return in time",
    ),
    SignalSpec(
        "hang.stall",
        ERROR,
        r"No available shared memory broadcast block found in \d+ seconds?|"
        r"RPC call to [\w.]+ timed out|TimeoutError|[Tt]imed out waiting|did not respond (?:in|within)|"
        r"is not responding|Timeout while waiting|stuck for \d+|No response (?:for|in) \d+|"
        r"Health check failed",
        anchors=("broadcast block", "Error", "RPC call", "Health check"),
        extra=alternatives(
            "timed out|Timed out|Timeout|No response|not responding|stuck for|did not respond"
        ),
        why="a process stopped making progress",
    ),
    SignalSpec(
        "hang.narrative",
        NARRATIVE,
        # (not vLLM's "This might cause deadlock in distributed execution.", printed above
        # every worker traceback whether or not anything deadlocks)
        r"(?i)\b(?:hangs?|hanging|hung|stuck|(?<!might cause )deadlock(?:ed|s)?|freez(?:es|ing)|"
        r"frozen|no progress|"
        r"never (?:finish|return|complete)s?)\b|(?:100|99)% (?:GPU )?util",
        extra=alternatives(
            "hang|Hang|hung|stuck|Stuck|deadlock|Deadlock|freez|Freez|frozen|no progress|"
            "never |% util|% GPU util"
        ),
    ),
    # --- context that moves the verdict ---------------------------------------------------------
    SignalSpec(
        "context.padding",
        CONTEXT,
        r"raw_bs=(?P<raw>\d+)[ ,]+(?:graph_bs|bs|padded_bs|capture_bs)=(?P<graph>\d+)|"
        r"cuda graph replay padding|"
        r"(?:padded|padding) (?:from )?(?:bs|batch(?: size)?)[ =:]+(?P<raw2>\d+)[^\n]{0,20}?"
        r"(?:to|->|→)\s*(?P<graph2>\d+)",
        anchors=("EAGLE",),
        extra=("raw_bs", "padding", "padded"),
        why="a replay at a batch smaller than the captured one: the padding rows are live",
    ),
    SignalSpec(
        "context.batch-shrink",
        NARRATIVE,
        r"(?i)batch(?: size)? (?:shrinks?|drops?|decreases?|falls?)|"
        r"running (?:batch|requests?)[^\n]{0,30}(?:shrinks?|drops?|decreases?|falls?)|"
        r"requests? (?:finish(?:es|ed)?|complete[sd]?)\b|"
        r"after (?:running )?(?:for )?(?:a (?:long )?(?:while|time)|some time|\d+ ?(?:hours?|minutes?|mins?))",
        extra=alternatives(
            "shrink|drops|decreas|falls|request finish|requests finish|requests complete|"
            "request complete|after |After "
        ),
    ),
    SignalSpec(
        "context.eager-ab",
        NARRATIVE,
        rf"(?i){_NO_GRAPH}[^\n]{{0,80}}?\b{_OK}\b|\b{_OK}\b[^\n]{{0,60}}?{_NO_GRAPH}",
        extra=("enforce", "disable-cuda-graph", "disable_cuda_graph", "cudagraph_mode"),
        unless=("still crash", "still fail", "also crash", "also fail"),
        why="the reporter's A/B: the failure goes away without graphs",
    ),
    SignalSpec(
        "context.none-still-fails",
        NARRATIVE,
        r"(?i)cudagraph_mode[\"':= ]+NONE[^\n]{0,80}?(?:still|also) (?:crash|fail|error)",
        extra=("cudagraph_mode",),
        why="failing with graphs off points at torch.compile/inductor, not graphs "
        f"({cite('vllm-compile-not-graphs').ref})",
    ),
    SignalSpec(
        "context.launch-blocking",
        CONTEXT,
        r"CUDA_LAUNCH_BLOCKING=1",
        extra=("CUDA_LAUNCH_BLOCKING",),
        unless=("consider passing", "might be asynchronously"),
        why="the run was synchronous: the failing frame is where the fault happened",
    ),
    SignalSpec(
        "mode.skip",
        CONTEXT,
        r"Skipping CUDA graph capture|CUDA graphs? (?:is|are|will be) (?:disabled|turned off|not used)|"
        r"[Dd]isabl(?:e|ing) (?:cuda|CUDA) graphs?|cuda graph is disabled|"
        r"[Ff]all(?:ing)? back to (?:eager|PIECEWISE|NONE)",
        anchors=("CUDA",),
        unless=("Not recommended", "Possible solutions", "--disable-cuda-graph"),
        extra=("cuda graph", "disabl", "Disabl", "fall", "Fall"),
        requires=("Skipping", "isabl", "turned off", "not used", "back to"),
    ),
    SignalSpec(
        "mode.unsupported",
        CONTEXT,
        r"(?:cudagraph_mode|CUDA ?[Gg]raph(?:Mode)?|cuda ?graph)[^\n]{0,100}?"
        r"(?:not supported|unsupported|incompatible|not compatible)|"
        r"(?:not supported|unsupported|incompatible|not compatible)[^\n]{0,100}?"
        r"(?:cudagraph_mode|CUDA ?graphs?|cuda ?graphs?|CUDAGraphMode)",
        anchors=("CUDA",),
        extra=("cuda graph", "cuda_graph", "_mode"),
        requires=("supported", "compatible"),
        why="a graph mode the attention backend or draft cannot run",
    ),
    SignalSpec(
        "health.gibberish",
        NARRATIVE,
        r"(?i)gibberish|garbage (?:output|tokens?|text|drafts?)|nonsense (?:output|tokens?)|"
        r"wrong (?:draft )?tokens|accuracy (?:drops?|degrad\w*|collapses?)|gsm8k[^\n]{0,30}\b0\.0\b|"
        r"acceptance (?:rate |length )?(?:drops?|fell|falls|collapses?|goes) (?:to )?(?:zero|0\b|near)",
        extra=alternatives("gibberish|Gibberish|garbage|nonsense|wrong |accuracy|gsm8k|acceptance"),
        requires=alternatives(
            "gibberish|garbage|nonsense|wrong|accuracy|gsm8k|drop|fell|fall|collapse|goes"
        ),
        why="a silent failure: drafts are wrong, nothing crashes",
    ),
    # --- draft loading, kernel limits, graph sizes, engine kernels (issue 29 blind spots) -------
    SignalSpec(
        "load.draft-weights",
        ERROR,
        r"(?:KeyError: |[Nn]o module or parameter named )"
        r"'(?:model\.)?(?:fc|midlayer|layers\.\d+|embed_tokens|lm_head|d2t|t2d|"
        r"eagle|mtp|draft|enorm|hnorm|eh_proj|shared_head)[\w.]*'|"
        r"[Ww]eights? (?:were |are )?not initialized from checkpoint|"
        r"Following weights were not initialized|"
        r"Attempted to load weight \(torch\.Size\(\[[\d, ]*\]\)\) into parameter|"
        # the weight loader's own check, quoted in the traceback: a checkpoint tensor whose
        # shape is not its parameter's (5 of 5 such reports in the labelled sets are config)
        r"assert \w+(?:\.data)?\.shape == loaded_weight\.shape|"
        r"(?i:eagle-?3 (?:is )?not supported|(?:does|do) not support eagle-?3)",
        anchors=(
            "KeyError",
            "parameter named",
            "initialized",
            "Attempted to load",
            "loaded_weight.shape",
            "agle3",
            "agle-3",
            "AGLE3",
            "AGLE-3",
        ),
        why="the draft's weights do not load into the module the engine built for it "
        "(vllm/model_executor/model_loader/default_loader.py::DefaultModelLoader.load_weights "
        "lists the weights not initialized from checkpoint; "
        "vllm/model_executor/model_loader/weight_utils.py::default_weight_loader asserts "
        "'Attempted to load weight (<checkpoint size>) into parameter (<module size>)')",
    ),
    SignalSpec(
        "spec.k-limit",
        ERROR,
        r"(?i:(?:num_speculative_tokens|speculative[_ ]tokens|num_draft_tokens|max_draft_len|"
        r"speculative_num_steps|draft[_ ]tokens)[^\n]{0,60}?(?:not supported|unsupported|"
        # "must be provided" is a required argument left out (vllm#20375's startup
        # ValidationError), not a limit on the number of speculative tokens.
        r"must be(?! (?:provided|set|specified|given|passed)\b)|should be|only supports?|"
        r"exceeds?|at most)|(?:not supported|unsupported|"
        r"only supports?|at most)[^\n]{0,40}?(?:num_speculative_tokens|speculative tokens|"
        r"draft tokens|max_draft_len))",
        anchors=(
            "speculative",
            "Speculative",
            "draft_tokens",
            "draft tokens",
            "draft_len",
            "Draft tokens",
        ),
        why="a kernel or graph configuration that supports only some numbers of speculative tokens",
    ),
    SignalSpec(
        "spec.refused",
        ERROR,
        # The engine refuses speculative decoding on a platform, backend or feature ("Speculative
        # decoding not yet supported for XPU backend", "... is not supported with speculative
        # decoding"); a model or a draft the engine does not know is no mode ("not supported for
        # batched MLX models" is the model's; load.draft-weights reads the draft's).
        r"(?i:(?:speculative[ _]decod\w*|spec[ _]decod\w*)[^\n]{0,40}?(?:is |are )?not (?:yet )?"
        r"supported (?:for|with|on|when|in|by)\b(?![^\n]{0,30}\b(?:models?|architectures?)\b)|"
        r"(?:is|are) not (?:yet )?supported (?:with|when using|together with|in combination with)"
        r"[^\n]{0,20}?(?:speculative[ _]decod\w*|spec[ _]decod\w*))",
        anchors=("supported",),
        why="the engine refuses speculative decoding together with a platform, backend or "
        "feature: a mode it does not support with it",
    ),
    SignalSpec(
        "shape.graph-size",
        ERROR,
        r"expected size (?P<got>\d+)==(?P<want>\d+)",
        anchors=("expected size",),
        why="torch's size guard of a compiled graph (assert_size_stride): the batch reached "
        "a graph built for another token count",
    ),
    SignalSpec(
        "kernel.engine",
        ERROR,
        r"Error occurred when running GEMM|\[TensorRT-LLM\]\[ERROR\][^\n]{0,80}?(?:gemm|GEMM)|"
        r"(?:flash_fwd|flash_attn_3|fa3|hopper/flash_api)[^\n]{0,120}?(?:launch|failed|error)",
        anchors=("GEMM", "gemm", "flash_fwd", "flash_attn_3", "fa3", "flash_api"),
        why="the fault is inside an engine's own kernel (a TRT-LLM GEMM, a FlashAttention-3 "
        "launch) that eaglegraph does not rebuild",
    ),
    SignalSpec(
        "copy.overflow",
        ERROR,
        r"could not broadcast input array from(?: shape \((?P<src>\d+)\s*,?\s*\) into "
        r"shape \((?P<dst>\d+)\s*,?\s*\))?",
        anchors=("could not broadcast",),
        why="numpy's copy of a longer array into a preallocated slice (`buf[:n] = x`, the "
        "engines' host-side token and position buffers): a count ran past the buffer's end",
    ),
)

# -- what a hit may be ------------------------------------------------------------------------
# Asynchronous faults: reported at the next synchronisation, so their phase decides their class.
ASYNC_FAULTS = ("cuda.illegal-address", "cuda.misaligned", "cuda.launch-failure", "error.segfault")
# Root errors that name their own mechanism. The order ranks signals found on one line: the
# first listed is the one the primary error is reported as.
SPECIFIC = (
    *ASYNC_FAULTS,
    "index.oob",
    "cuda.device-assert",
    "memory.oom",
    "memory.negative-estimate",
    "memory.pool-leak",
    "capture.unsupported",
    "shape.mismatch",
    "config.keys",
    "error.nan",
    "hang.watchdog",
    "hang.stall",
    "load.draft-weights",
    "spec.k-limit",
    "shape.graph-size",
    "kernel.engine",
)
# Every candidate root error: the specific ones, then an engine's capture wrapper, then any
# exception line.
ROOT = (*SPECIFIC, "capture.failed", "error.exception")
# Consequences of an earlier failure: never the primary error while a root error exists, and an
# exception on one of their lines is not a root error either.
SECONDARY_SIGNALS = (
    "secondary.nccl-timeout",
    "secondary.nccl-error",
    "secondary.engine",
    "secondary.abort",
    "secondary.peer-lost",
)
# The mechanism of the primary error: the first row with a signal on its line names it; a line
# with none of them is a plain exception.
MECHANISMS: tuple[tuple[Mechanism, tuple[str, ...]], ...] = (
    (Mechanism.KERNEL, ("kernel.engine",)),
    (Mechanism.LOAD, ("load.draft-weights",)),
    (Mechanism.K_LIMIT, ("spec.k-limit",)),
    (Mechanism.GRAPH_SIZE, ("shape.graph-size",)),
    (Mechanism.OOB, ("index.oob",)),
    (Mechanism.OOM, ("memory.oom", "memory.negative-estimate", "memory.pool-leak")),
    (Mechanism.SHAPE, ("shape.mismatch",)),
    (Mechanism.CAPTURE, ("capture.unsupported",)),
    (Mechanism.ASYNC, ASYNC_FAULTS),
    (Mechanism.ASSERT, ("cuda.device-assert",)),
    (Mechanism.CONFIG, ("config.keys",)),
    (Mechanism.NAN, ("error.nan",)),
    (Mechanism.HANG, ("hang.watchdog", "hang.stall")),
    (Mechanism.CAPTURE_WRAPPER, ("capture.failed",)),
)
