"""What to check next, and the eaglegraph command that rebuilds the failing situation.

The reproduce line is built only from what the log said: the draft path (or the built-in preset
of the same family and draft kind), the CUDA-graph mode that actually ran, the attention
backend's metadata style, K, and the behaviour profile whose semantics match the framework
version (chosen by `eaglegraph.known`, where each profile is tied to the changes behind it).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from eaglegraph.known.choose import profile_for_version
from eaglegraph.known.hazards import Hazard
from eaglegraph.known.profiles import DEFAULT_PROFILE, engine_profiles, get_profile
from eaglegraph.known.triage_repro import ENGINE_KERNEL_FACT, PRESET_FAMILIES, RUNNER_FLAGS
from eaglegraph.known.triage_rules import FLASHINFER_FULL_FLAGS, METHOD_KINDS
from eaglegraph.known.versions import ENGINES, parse_version
from eaglegraph.pair.kinds import DraftKind, kind_for_method
from eaglegraph.pair.presets import PRESETS
from eaglegraph.results.triage import Category, TriageConfig
from eaglegraph.rig.modes import Mode
from eaglegraph.rig.options import ATTENTION_BACKENDS
from eaglegraph.triage.fixes import FixContext, mismatch_kind

STALE, OOB, OOM, CAPTURE, MODE, CONFIG, ACCEPT, HANG, OTHER = Category

PROBE_BACKENDS = ATTENTION_BACKENDS
PROBE_MODES = tuple(Mode.__members__)


def behavior_for(cfg: TriageConfig) -> tuple[str, str]:
    """The `--behavior` profile for the framework and version, and why it was chosen."""
    choice = profile_for_version(cfg.framework, cfg.version, cfg.runner)
    return choice.name, choice.why


def _mode(cfg: TriageConfig) -> str:
    """The mode that actually ran: resolved > inferred from captures > requested > default."""
    for mode in (cfg.cudagraph_mode_resolved, cfg.cudagraph_mode_requested):
        if mode in PROBE_MODES:
            return mode
    if cfg.framework in ("sglang", "trtllm"):
        return "FULL"
    if cfg.attention_backend == "flashinfer":
        return "PIECEWISE"  # FULL_AND_PIECEWISE is downgraded for FlashInfer + spec decode
    return "FULL_AND_PIECEWISE"


def draft_kind(method: str | None) -> DraftKind | None:
    """The draft kind an engine's spec-decode method names (registry first, then known/)."""
    if not method:
        return None
    kind = kind_for_method(method)
    if kind is not None:
        return kind
    m = method.lower()
    value = METHOD_KINDS.get(m) or ("mtp" if "mtp" in m or "nextn" in m else None)
    return DraftKind(value) if value else None


def _family(cfg: TriageConfig) -> str | None:
    """The preset family (config model_type) of the report's target, or of its draft's name."""
    for name in (cfg.target_model, cfg.draft_model):
        low = (name or "").lower()
        family = next((fam for word, fam in PRESET_FAMILIES if word in low), None)
        if family is not None:
            return family
    return None


def model_arg(cfg: TriageConfig, notes: list[str] | None = None) -> str | None:
    """The built-in tiny preset that stands in for the report's pair: its draft kind (an MTP
    report gets an MTP preset, DFlash the DFlash one), of the target's family where one exists.
    Never a path or Hugging Face id from the log: a command must run as printed on a fresh
    machine. None when the report's draft kind is one eaglegraph does not rebuild."""
    notes = notes if notes is not None else []
    kind = draft_kind(cfg.spec_method)
    if kind is None and cfg.spec_method and cfg.spec_method.lower() not in ("none", "null"):
        notes.append(
            f"no eaglegraph reproduction: the draft method {cfg.spec_method!r} is not one "
            "eaglegraph rebuilds (EAGLE-1, EAGLE-3, MTP, DFlash)"
        )
        return None
    family = _family(cfg)
    tiny = [p for p in PRESETS.values() if p.with_weights]
    of_kind = [p for p in tiny if kind is None or p.kind == kind.value]
    if not of_kind:
        notes.append(f"no built-in preset of draft kind {kind}: no eaglegraph reproduction")
        return None
    same = [p for p in of_kind if p.target.get("model_type") == family]
    if kind is None and family is None:
        notes.append(
            "the report names neither the draft kind nor the target: the preset is an "
            "arbitrary EAGLE-3 pair (say which draft and target ran)"
        )
        return next((p.name for p in of_kind if p.kind == DraftKind.EAGLE3.value), of_kind[0].name)
    return (same or of_kind)[0].name


def _pool(behavior: str) -> tuple[str, str]:
    """(pool policy the deployment used, the one to compare against): the profile's."""
    pool = get_profile(behavior).default_pool
    return pool, "shared" if pool == "dedicated" else "dedicated"


def _cmd(*parts: str | int | None) -> str:
    return " ".join(shlex.quote(str(p)) for p in parts if p is not None and p != "")


@dataclass(frozen=True)
class Rebuild:
    """What every suggested command rebuilds: one preset, one framework, runner and profile."""

    preset: str
    behavior: str
    flags: tuple[str | int, ...]

    def command(self, verb: str, *args: str | int | None) -> str:
        return _cmd("eaglegraph", verb, self.preset, *args, *self.flags)


def _rebuild(cfg: TriageConfig, behavior: str, notes: list[str]) -> Rebuild | None:
    if cfg.framework not in (None, *ENGINES):
        label = cfg.framework
        notes.append(
            f"no eaglegraph reproduction: eaglegraph rebuilds vLLM and SGLang steps, not {label}"
        )
        return None
    preset = model_arg(cfg, notes)
    if preset is None:
        return None
    flags: list[str | int] = []
    engine = get_profile(behavior).engine
    if engine != "vllm":
        flags += ["--framework", engine]
    if engine == "vllm" and cfg.runner in RUNNER_FLAGS:
        flags += ["--runner", RUNNER_FLAGS[cfg.runner]]
    if behavior != DEFAULT_PROFILE[engine]:
        flags += ["--behavior", behavior]
    if cfg.num_spec_tokens:
        flags += ["-K", cfg.num_spec_tokens]
    return Rebuild(preset, behavior, tuple(flags))


def probe_command(cfg: TriageConfig, rb: Rebuild, notes: list[str]) -> str:
    backend = cfg.attention_backend
    args: list[str | int | None] = ["--mode", _mode(cfg)]
    if backend in PROBE_BACKENDS:
        args += ["--attention-backend", backend]
    elif backend:
        notes.append(f"attention backend {backend!r} is not emulated; the probe uses its default")
    return rb.command("probe", *args)


def _hazard_profile(cfg: TriageConfig, hazards: list[Hazard]) -> tuple[str, str] | None:
    """With the version unknown, the newest profile that still has a matched hazard, so the
    probe can show it (the current profile has the fix and would find nothing)."""
    if parse_version(cfg.version) is not None:
        return None
    for h in hazards:
        if h.flag is None or h.engine is None or h.engine != (cfg.framework or h.engine):
            continue
        profiles = engine_profiles(h.engine)  # oldest first; the newest carries every fix
        fixed = profiles[-1].flags().get(h.flag)
        with_hazard = [p for p in profiles if fixed is not None and p.flags()[h.flag] != fixed]
        if with_hazard:
            p = with_hazard[-1]
            return (
                p.name,
                f"version not in the report; {p.name} still has {h.id} (if you run a release that has the fix, drop --behavior)",
            )
    return None


def _rebuilds_a_hazard(behavior: str, hazards: list[Hazard]) -> bool:
    """The profile still has the bug of a matched hazard (its flag differs from the newest's)."""
    profile = get_profile(behavior)
    newest = engine_profiles(profile.engine)[-1].flags()
    return any(
        h.flag is not None
        and h.engine == profile.engine
        and profile.flags().get(h.flag) != newest.get(h.flag)
        for h in hazards
    )


def _downgrading_profile(engine: str) -> str | None:
    """The newest profile of `engine` in which FlashInfer has no FULL spec-decode path."""
    older = [
        p.name
        for p in engine_profiles(engine)
        if not any(p.flags().get(f, False) for f in FLASHINFER_FULL_FLAGS)
    ]
    return older[-1] if older else None


# Classes the rig rebuilds: a padded replay's stale or out-of-range read, a pool's memory, a
# mode resolution, a capture. The rest have no command that fails the same way.
_NO_REPRODUCTION = {
    HANG: "a hang has no eaglegraph reproduction: dump every rank's stacks while it is stuck "
    "(`eaglegraph stacks PID --subprocesses` on each host)",
    OTHER: "no eaglegraph reproduction: nothing in the report points at a mechanism the rig "
    "rebuilds",
    CONFIG: "no eaglegraph reproduction from a preset: a config mismatch reproduces only on the "
    "user's own checkpoint; run `eaglegraph inspect DRAFT_DIR` on the draft's folder",
}
_PARTIAL = {
    CAPTURE: "a capture that faults in an engine kernel has no eaglegraph reproduction; the "
    "command rebuilds the same capture to compare phases and memory",
    ACCEPT: "silent acceptance loss has no eaglegraph reproduction yet; the probe checks the "
    "draft's graph inputs for stale reads",
}


def _behavior(ctx: FixContext, hazards: list[Hazard], notes: list[str]) -> str:
    """The one profile every suggested command uses."""
    cfg = ctx.config
    behavior, why = _hazard_profile(cfg, hazards) or behavior_for(cfg)
    unknown = parse_version(cfg.version) is None
    older = _downgrading_profile(get_profile(behavior).engine)
    flashinfer_mode = ctx.category == MODE and cfg.attention_backend == "flashinfer"
    if flashinfer_mode and unknown and older is not None and older != behavior:
        behavior = older
        why = (
            "version not in the report; the newest profile in which FlashInfer has no FULL "
            "spec-decode path"
        )
    notes.append(f"behavior {behavior}: {why}")
    return behavior


def reproduce(
    ctx: FixContext, notes: list[str], hazards: list[Hazard] | None = None
) -> tuple[str | None, list[str]]:
    """The main command and up to two others that look at the same failure differently; every
    one runs as printed on a fresh machine (a built-in preset, the report's framework, runner,
    profile and K)."""
    cfg = ctx.config
    category = ctx.category
    hazards = hazards or []
    if ENGINE_KERNEL_FACT in ctx.verdict.facts:
        notes.append(
            "no eaglegraph reproduction: the fault is inside an engine kernel (a TRT-LLM GEMM, a "
            "FlashAttention-3 launch) that eaglegraph does not rebuild; report it with "
            "CUDA_LAUNCH_BLOCKING=1 and compute-sanitizer output"
        )
        return None, []
    if category in _NO_REPRODUCTION and not (
        category == HANG and ctx.verdict.phase.at_failure == "capture"
    ):
        notes.append(_NO_REPRODUCTION[category])
        if category != OTHER or not (cfg.spec_method or cfg.draft_model):
            return None, []
    behavior = _behavior(ctx, hazards, notes)
    rb = _rebuild(cfg, behavior, notes)
    if rb is None:
        return None, []
    if category in _PARTIAL:
        notes.append(_PARTIAL[category])
    probe = probe_command(cfg, rb, notes)
    inspect = rb.command("inspect")
    pool, _ = _pool(behavior)
    mode = _mode(cfg)
    if category in (STALE, OOB) and not _rebuilds_a_hazard(behavior, hazards):
        notes.append(
            f"no eaglegraph reproduction of a known bug: no matched hazard is rebuilt by "
            f"{behavior}; the probe re-checks the same step for a stale or out-of-range read"
        )
    if category == OOM:
        notes.append(
            "no CPU reproduction of the OOM itself: on a CUDA GPU, `eaglegraph memdiff` and "
            "`capture` measure the same pools; on CPU the prediction is the figure to compare"
        )
        return inspect + " --predict-memory", [
            rb.command("capture", "--mode", mode, "--pool", pool)
        ]
    if category == MODE:
        backend = cfg.attention_backend if cfg.attention_backend in PROBE_BACKENDS else None
        requested = cfg.cudagraph_mode_requested
        requested = requested if requested in PROBE_MODES else None
        if backend is None:
            notes.append(
                "the report names no emulated attention backend; inspect shows a downgrade "
                "only for the backend that causes it (e.g. --attention-backend flashinfer)"
            )
        args = ["--mode", requested] if requested else []
        args += ["--attention-backend", backend] if backend else []
        return rb.command("inspect", *args), [probe]
    if category in (STALE, OOB, ACCEPT):
        return probe, [inspect]
    if category in (CAPTURE, HANG):
        return rb.command("capture", "--mode", mode, "--pool", pool), [probe]
    return inspect, []


_CHECKS: dict[str, tuple[str, ...]] = {
    STALE: (
        "Confirm with graphs off for the draft: the crash should vanish with --enforce-eager "
        "(vLLM) or --disable-cuda-graph (SGLang).",
        "Rerun with CUDA_LAUNCH_BLOCKING=1: an asynchronous fault is reported at the next sync "
        "point, so the failing frame in this log may be the wrong one.",
        "Note the running batch size when it fails: a raw batch below a captured size means "
        "padded rows were replayed with stale metadata.",
    ),
    OOB: (
        "Compare the bound in the assert with the draft config (max_position_embeddings, vocab "
        "size) and with the serving context length.",
        "Rerun with CUDA_LAUNCH_BLOCKING=1 to get the gather that fired.",
    ),
    OOM: (
        "Compare the capture sizes with the KV cache size printed at startup; shrink the largest "
        "capture sizes or --cuda-graph-max-bs before lowering memory utilisation.",
        "Check the graph-memory estimate lines: a negative or far-off estimate mis-sizes the KV "
        "cache.",
    ),
    CAPTURE: (
        "Find the first frame inside the captured function: a host sync (.item(), .tolist(), "
        "print of a tensor), an allocation or a stream wait inside capture breaks it.",
        "Retry with fewer capture sizes (or --cuda-graph-max-bs) to see whether one size fails.",
    ),
    MODE: (
        "Compare the requested and the resolved cudagraph_mode: the downgrade decides which "
        "graphs the draft and target run, and their speed.",
        "Check whether the attention backend supports FULL graphs with spec decode "
        "(uniform query length K+1).",
    ),
    CONFIG: (
        "Check the draft config: target_hidden_size, draft_vocab_size, "
        "eagle_aux_hidden_state_layer_ids and max_position_embeddings against the target.",
        "For a reduced draft vocabulary, check that d2t/t2d maps are present and that logits "
        "buffers are sized from the draft head.",
    ),
    ACCEPT: (
        "Compare acceptance with --enforce-eager or cudagraph_mode=NONE: a drop only with graphs "
        "means the captured draft reads stale or missing inputs (hidden states, aux layers).",
        "Check the draft's input dtypes and that aux-layer capture is configured before graph "
        "capture (EAGLE-3).",
    ),
    HANG: (
        "Dump the live stacks of every rank: `eaglegraph stacks PID --subprocesses` (py-spy).",
        "Look for a rank that crashed first: an NCCL watchdog on the others is a consequence.",
    ),
    OTHER: (
        "Rerun with CUDA_LAUNCH_BLOCKING=1 and, if it is a CUDA fault, with compute-sanitizer.",
        "Try with graphs off (--enforce-eager / --disable-cuda-graph) to see whether CUDA graphs "
        "are involved at all.",
    ),
}


def checks(ctx: FixContext) -> list[str]:
    out = list(_CHECKS.get(ctx.category, ()))
    cfg = ctx.config
    if ctx.verdict.secondary and ctx.verdict.primary is not None:
        out.append("Ignore the NCCL watchdog / engine-death lines: they follow the primary error.")
    if ctx.category == CONFIG:
        kind = mismatch_kind(ctx)
        if kind:
            out.insert(
                0, f"The mismatching sizes look like a {kind} mismatch between draft and target."
            )
    if ctx.state.hits("context.eager-ab"):
        out.append("The reporter saw it go away without graphs: a graph-specific cause is likely.")
    if cfg.attention_backend == "flashinfer" and ctx.category in (STALE, MODE):
        out.append(
            "FlashInfer with spec decode runs draft decodes PIECEWISE on older builds; "
            "try FLASH_ATTN to compare."
        )
    if ctx.verdict.phase.at_failure == "capture" and ctx.category != CAPTURE:
        out.append(
            "It failed during capture: the capture sizes and pool policy decide the memory "
            "and the shapes involved."
        )
    return out
