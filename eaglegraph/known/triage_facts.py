"""What the triage fact reader measures, as data: thresholds and the line forms it looks for.

`eaglegraph.triage.facts` derives every fact of a log in one place (`read_log`); the numbers
and patterns it compares against live here, so a threshold is changed, reviewed and tested
without reading code. The values come from crash-triage.md and the labelled reports under
tests/ (each is the boundary between the healthy and the failing logs seen there).
"""

from __future__ import annotations

import re

from eaglegraph.known.triage_rules import GRAPH_CAPTURE

# -- log levels ------------------------------------------------------------------------------
# A line at a quiet level is not a failure even when its words name one; per signal, the levels
# at which a hit is not a root error (nor a fact that needs a loud line).
QUIET_LEVELS = ("INFO", "DEBUG")
_QUIET_OR_WARNING = (*QUIET_LEVELS, "WARNING")
QUIET: dict[str, tuple[str, ...]] = {
    "error.exception": _QUIET_OR_WARNING,
    "config.keys": _QUIET_OR_WARNING,
    "capture.failed": _QUIET_OR_WARNING,
    "error.nan": _QUIET_OR_WARNING,
    "memory.oom": QUIET_LEVELS,
    "hang.stall": QUIET_LEVELS,
}
# Words that keep a quiet-level hit loud: vLLM's shm broadcast stall is logged at INFO.
LOUD_ANYWAY: dict[str, str] = {"hang.stall": "broadcast block"}

# -- primary error ---------------------------------------------------------------------------
# Exception types that are themselves consequences of an earlier failure.
SECONDARY_TYPES = re.compile(
    r"EngineDeadError|AsyncEngineDeadError|ActorDiedError|RayTaskError|KeyboardInterrupt|"
    r"SystemExit|BrokenPipeError|ConnectionResetError|CancelledError|ConnectionRefusedError"
)
# Lines that wrap an error printed elsewhere ("Worker failed with error ...").
WRAPPER_TEXT = re.compile(
    r"Worker failed with error|please check the stack trace above|hit an exception|"
    r"Exception in worker|Engine core initialization failed|EngineCore failed to start|"
    r"See (?:the )?(?:root cause|stack trace) above"
)
# A Markdown table cell is the reporter's summary, not a log line.
TABLE_CELL = "|"

# -- context around the failure --------------------------------------------------------------
# An asynchronous fault pinned on an eager kernel launch inside a library (FlashInfer .cuh,
# "at function cudaLaunchKernel"): not a graph replay, whose errors surface at cudaGraphLaunch
# or at the next synchronisation.
EAGER_ATTRIBUTION = re.compile(r"cudaLaunchKernel|\.cuh\b|at function \w+|\.cu:\d+|launch_bounds")
# A padding line counts for a failure up to this many lines after it.
PADDING_AFTER_LINES = 5
# A "batch shrinks" sentence counts within this many lines of the failure.
SHRINK_NEAR_LINES = 400
# `#running-req` fell: of the last SHRINK_SAMPLES readings before the failure (at least
# SHRINK_MIN_SAMPLES, peak at least SHRINK_MIN_PEAK), the last is at most SHRINK_RATIO of the peak.
SHRINK_SAMPLES = 8
SHRINK_MIN_SAMPLES = 3
SHRINK_MIN_PEAK = 4
SHRINK_RATIO = 0.67
# The padded-replay line's (raw batch, captured batch).
PAD_SIZES = re.compile(
    r"raw_bs=(\d+)[ ,]+(?:graph_bs|bs|padded_bs|capture_bs)=(\d+)|"
    r"(?:padded|padding) (?:from )?(?:bs|batch(?: size)?)[ =:]+(\d+)[^\n]{0,20}?(?:to|->|→)\s*(\d+)"
)
# A statement that indexes or slices a tensor (`buf[: n] = -1`, `x[idx]`).
SUBSCRIPT = re.compile(r"\w\[[^\]]+\]")

# -- shapes and bounds -----------------------------------------------------------------------
VOCABISH = re.compile(r"vocab|lm_head|logits|embed|d2t|t2d|token_map")
HIDDENISH = re.compile(r"hidden|fc\.weight|\bfc\b|aux|width")
# A shape error between a checkpoint's weight and the parameter built for it (sglang's
# layers/parameter.py weight loaders: "assert param_data.shape == loaded_weight.shape", torch's load_state_dict "size
# mismatch for ...: copying a param with shape"): the sizes are a module's widths.
WEIGHTISH = re.compile(
    r"loaded_weight|param_data|copying a param|size mismatch for|load_\w*weight|"
    r"layers/parameter\.py|weight_loader"
)
# A shape error whose sizes are named, not printed, as counts of the step's tokens (vllm#44304:
# "expanded size of the tensor (N) must match the existing size (N+len(scheduled_spec_decode_
# tokens))"): the dimension is a token count, so the error is bookkeeping, not a width.
TOKENISH = re.compile(r"tokens?\b|token_len|seq_?lens?|num_scheduled|query_start|batch")
# The sizes a shape error compares: "tensor a (4096)", "1x5120 and 4096x4096", and torch.cat's
# "Expected size 6 but got size 8 for tensor number 1" (aten/src/ATen/native/TensorShape.cpp).
SHAPE_NUMBERS = re.compile(r"\((\d+)\)|\b(\d{4,6})x(\d{3,6})\b|\bsize (\d+)\b")
# torch's view/reshape refusal (aten/src/ATen/InferSize.h::infer_size_impl): "shape '[9, -1, 32,
# 576]' is invalid for input of size 516096". The trailing sizes are per-row widths (heads x
# head_dim); when the input divides by them, every row is as wide as the view says and what does
# not fit is the leading count (a batch that does not split the step's tokens evenly): a token
# count, not a width (sglang#15790's draft-extend batch with unequal accept lengths).
VIEW_SHAPE = re.compile(
    r"shape '\[(?P<dims>-?\d+(?:, ?-?\d+)+)\]' is invalid for input of size (?P<n>\d+)"
)
# A size this large in a shape error is a vocabulary, not a hidden width.
VOCAB_MIN = 30000
# A hidden width is at least WIDTH_MIN and a multiple of WIDTH_STEP (every public EAGLE/MTP
# target: 2048, 4096, 4480, 5120, 7168, ...); a shape error whose sizes are all below or off
# that grid is over a token count (a batch x (K+1) against a padded or captured size).
WIDTH_MIN = 256
WIDTH_STEP = 64
# An index bound that is a model's position limit (a draft trained for 2048 positions).
INDEX_BOUND = re.compile(r"<\s*(\d{3,6})\b")
POSITION_LIMITS = frozenset({2048, 4096, 8192, 16384, 32768, 65536, 131072})

# -- memory ----------------------------------------------------------------------------------
# Below this KV budget (GiB), with an OOM or spec decode, the graphs squeezed the cache.
KV_SQUEEZED_GIB = 1.0

# -- modes -----------------------------------------------------------------------------------
# vLLM's spec-decode downgrade line is owned by `mode.downgrade`, not by `mode.unsupported`.
DOWNGRADE_TEXT = "is not supported with spec"
LOUD_LEVELS = ("ERROR", "CRITICAL")
RAISED = re.compile(r"Error|Exception")

# -- acceptance ------------------------------------------------------------------------------
COLLAPSED_RATE = 0.05  # acceptance rate at or below: collapsed
COLLAPSED_LENGTH = 1.05  # mean acceptance length at or below (1.0 = bonus token only)
HEALTHY_RATE = 0.3  # a table row at or above this is a healthy configuration
FELL_FROM_RATE = 0.2  # acceptance "fell" only from at least this rate ...
FELL_RATIO = 0.5  # ... to below this share of it
FELL_LENGTH = 1.0  # or the mean length lost at least this many tokens

# The root error's own line places it inside a capture ("crashes during speculator prefill CUDA
# graph capture (... torch.cuda.graph() ...)", "fails while capturing the draft extend graph"):
# a report or CI summary that pastes one line has no capture banner before it to give the phase.
CAPTURE_ON_ERROR_LINE = re.compile(
    r"\b(?:during|while|in|at|when)\b[^.;]{0,40}?(?:" + GRAPH_CAPTURE + r")",
    re.I,
)

# Engines outside vLLM, SGLang and TensorRT-LLM that speculative-decoding reports come from
# (issue 29: 10 of heldout-4's 50 reports). Their graph capture, drafts and fixes are none of
# those triage knows, so a report that names one and no known engine says so. More specific
# first: LM Studio runs llama.cpp and MLX, koboldcpp and llama-cpp-python embed ggml.
OUTSIDE_ENGINES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(rx))
    for name, rx in (
        ("LM Studio", r"\bLM ?Studio\b|\blmstudio\b|\bmlx_engine\b"),
        ("koboldcpp", r"(?i)\bkoboldcpp\b"),
        ("llama-cpp-python", r"\bllama[-_]cpp[-_]python\b|\bllama_cpp\.|\bLlama\(model_path="),
        ("Ollama", r"(?i)\bollama\b"),
        ("MLX", r"\bo?MLX\b|\bmlx[-_](?:lm|vlm)\b|\bmlx\.core\b"),
        (
            "llama.cpp",
            r"\b(?:ik_)?llama\.cpp\b|\bllama-server\b|\bllama_(?:model_load|context)\b|"
            r"\b(?:ggml|GGML)_\w+",
        ),
    )
)
