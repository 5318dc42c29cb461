"""The options every command shares (inspect, capture, probe, memdiff), resolved once.

They can come as flags or as vLLM-style `--speculative-config` / `--compilation-config` JSON
(what users paste from their launch command). A flag and a JSON key that disagree is an
error rather than a silent precedence rule. The CLI parses its strings (flags, JSON text) into
one typed `PlanChoices`; this module resolves it against the engine's defaults.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from eaglegraph.errors import BadInput
from eaglegraph.known.backends import engine_backend, trtllm_cubins_bundled, vllm_default_backend
from eaglegraph.known.choose import profile_release, resolve_profile
from eaglegraph.known.profiles import Profile
from eaglegraph.known.runner_rules import TargetFacts, runner_for
from eaglegraph.known.runners import ModelRunner
from eaglegraph.known.sglang_backends import sglang_default_backend
from eaglegraph.known.sglang_capture import AUTO_SPEC_SOURCE
from eaglegraph.known.versions import parse_version
from eaglegraph.pair.kinds import all_specs, kind_for_method
from eaglegraph.rig.gpus import GpuSpec, get_gpu
from eaglegraph.rig.modes import Mode
from eaglegraph.rig.sglang_plan import sglang_auto_spec, sglang_chunked_prefill_size
from eaglegraph.rig.vllm_plan import breakable_enabled, vllm_batch_defaults

ATTENTION_BACKENDS = ("flash_attn", "flashinfer", "triton")
FRAMEWORKS = ("vllm", "sglang")
DEFAULT_MAX_NUM_SEQS = {"vllm": 128, "sglang": 48}
DEFAULT_MAX_NUM_BATCHED_TOKENS = 8192
# padding bugs need only a few requests; fewer requests means fewer, faster graphs
PROBE_MAX_NUM_SEQS = {"vllm": 4, "sglang": 10}
# capture on CPU (emulated backend) plans for this many requests unless --full-plan: the full
# vLLM plan is ~200 graphs and minutes of Triton interpretation, and the emulated backend
# measures no memory, so the small plan already shows every phase, mode and descriptor kind
CPU_CAPTURE_MAX_NUM_SEQS = {"vllm": 4, "sglang": 4}
# the JSON keys the plan reads; the CLI names any other key as ignored
SPECULATIVE_KEYS = ("method", "num_speculative_tokens")
COMPILATION_KEYS = (
    "cudagraph_mode",
    "mode",
    "cudagraph_capture_sizes",
    "max_cudagraph_capture_size",
)


@dataclass(frozen=True)
class PlanOptions:
    framework: str = "vllm"
    max_num_seqs: int = 128
    num_speculative_tokens: int = 3
    max_num_batched_tokens: int = 8192
    mode: Mode = Mode.FULL_AND_PIECEWISE
    attention_backend: str = "flash_attn"
    behavior: Profile = field(default_factory=lambda: resolve_profile(None))
    capture_sizes: tuple[int, ...] | None = None
    max_capture_size: int | None = None
    gpu: GpuSpec = field(default_factory=lambda: get_gpu(None))
    trtllm_artifacts: bool = True  # FlashInfer's TRT-LLM/XQA kernels can be loaded
    breakable: bool = False  # vLLM breakable graphs (runner flag); SGLang: explicit BCG
    compiled: bool = True  # the target is torch-compiled (piecewise capture available)
    head_dim: int | None = None
    defaults: tuple[str, ...] = ()  # settings taken from the engine's defaults, in words
    explicit_mode: bool = False  # --mode given (SGLang: FULL means no prefill graphs)
    # the vLLM model runner the step is rebuilt as (None: SGLang), and why it was chosen
    runner: ModelRunner | None = ModelRunner.MRV2
    runner_why: str = ""
    eagle_topk: int = 1  # SGLang's --speculative-eagle-topk (> 1: tree drafting)
    num_draft_tokens: int | None = None  # SGLang's --speculative-num-draft-tokens (trees)
    tp_size: int = 1  # SGLang's default cuda_graph_max_bs depends on it (`tp_size < 4`)
    # SGLang's own name for a default backend the rig family stands in for (trtllm_mha, fa4):
    # its draft-extend graph follows that backend's release rule
    engine_attention_backend: str | None = None
    # SGLang's --cuda-graph-max-bs (--cuda-graph-max-bs-decode from 0.5.14): the decode list's
    # largest batch size; None: the release's default for the GPU and TP
    cuda_graph_max_bs: int | None = None
    # SGLang: attention-DP groups inside TP (1: no DP attention) and two-batch overlap; both
    # align the graph batch sizes (`rig.sglang_plan.GraphLayout`)
    attn_dp_size: int = 1
    two_batch_overlap: bool = False
    mla: bool = False  # the target runs an MLA backend (SGLang caps its prefill graphs)

    def __post_init__(self) -> None:
        if self.runner is not None and not isinstance(self.runner, ModelRunner):
            object.__setattr__(self, "runner", ModelRunner(self.runner))  # from a run file

    @property
    def metadata_style(self) -> str:
        """FlashInfer keeps CSR metadata; flash-attn and Triton hold qsl/seq_lens/block table."""
        return "flashinfer" if self.attention_backend == "flashinfer" else "flash_attn"


def _merge(flag_value: Any, json_value: Any, name: str) -> Any:
    if flag_value is not None and json_value is not None and flag_value != json_value:
        raise BadInput(f"{name} given twice with different values ({flag_value} and {json_value})")
    return flag_value if flag_value is not None else json_value


def _positive(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise BadInput(f"{name} must be a positive integer, found {value!r}")
    return value


@dataclass(frozen=True)
class PlanChoices:
    """What the user chose for the plan, before defaults: None is "not said". The vLLM JSON
    configs come parsed (objects), as pasted; a mode may be a Mode or its name, as engines
    spell it in their own configs."""

    framework: str | None = None
    max_num_seqs: int | None = None
    num_speculative_tokens: int | None = None
    max_num_batched_tokens: int | None = None
    mode: Mode | str | None = None
    attention_backend: str | None = None
    behavior: str | None = None
    capture_sizes: tuple[int, ...] | None = None
    speculative_config: Mapping[str, Any] | None = None
    compilation_config: Mapping[str, Any] | None = None
    gpu: str | None = None
    gpu_memory_gib: float | None = None  # `--gpu-memory`: a card the table lacks, or another SKU
    gpu_capability: tuple[int, int] | None = None  # `--capability 9.0`
    trtllm_artifacts: bool | None = None
    runner: ModelRunner | None = None  # None: the runner the release picks (`--runner auto`)
    eagle_topk: int | None = None  # SGLang: draft branches per step (> 1: a tree)
    num_draft_tokens: int | None = None  # SGLang: tree tokens verified per request
    engine_version: str | None = None  # the exact release (`--engine`), when known
    tp_size: int | None = None  # the layout's TP size (SGLang's graph batch sizes read it)
    cuda_graph_max_bs: int | None = None  # SGLang: the decode capture list's largest size
    attn_dp_size: int | None = None  # SGLang: the layout's attention-DP groups
    two_batch_overlap: bool = False  # SGLang: --enable-two-batch-overlap


def _runner(
    fw: str, beh: Profile, c: PlanChoices, target: TargetFacts | None, method: str | None
) -> tuple[ModelRunner | None, str]:
    """The model runner and why: SGLang has one; a profile that models one runner keeps it;
    otherwise what the release picks for the target (`known.runner_rules`)."""
    if fw == "sglang":
        if c.runner is not None:
            raise BadInput("--runner picks a vLLM model runner; SGLang has one runner")
        return None, "SGLang has one model runner"
    if beh.runner is not None:
        if c.runner is not None and c.runner != beh.runner:
            raise BadInput(
                f"behavior {beh.name} models {beh.runner.upper()} only; drop --runner or pick "
                "another release"
            )
        return beh.runner, f"{beh.name} models {beh.runner.upper()} only"
    if target is None and c.runner is None:
        return ModelRunner.MRV2, "the rig's default (inspect shows the release's pick for a target)"
    version = parse_version(c.engine_version) or profile_release(beh)
    choice = runner_for(version, target or TargetFacts(), method=method, explicit=c.runner)
    return choice.runner, choice.why


def _vllm_backend_defaults(
    c: PlanChoices,
    beh: Profile,
    gpu: GpuSpec,
    target: TargetFacts | None,
    head_dim: int | None,
    backend: str,
    trtllm: bool,
    defaults: list[str],
) -> tuple[str, bool]:
    """What a server of this release picks when the launch line is silent: the attention
    backend for the GPU and target, and whether FlashInfer's TRT-LLM kernels are installed."""
    if c.attention_backend is None:
        chosen = vllm_default_backend(
            gpu.capability[0], mla=bool(target and target.mla), head_dim=head_dim
        )
        backend = chosen.rig_backend
        defaults.append(f"attention backend {chosen.engine_name} ({chosen.why})")
    if c.trtllm_artifacts is None and backend == "flashinfer":
        rule = trtllm_cubins_bundled(parse_version(c.engine_version) or profile_release(beh))
        trtllm = rule.bundled
        state = "bundled" if rule.bundled else "not installed (no flashinfer-cubin)"
        defaults.append(f"FlashInfer TRT-LLM kernels {state} in a fresh install")
    return backend, trtllm


def _sglang_backend_default(
    c: PlanChoices,
    beh: Profile,
    gpu: GpuSpec,
    target: TargetFacts | None,
    architecture: str | None,
    method: str | None,
    defaults: list[str],
    auto_topk: int | None = None,
) -> tuple[str, str]:
    """The backend an SGLang server of this release picks when the launch line is silent, as
    the rig family it runs as (flash_attn where the rig does not model it, said so), and its
    own name."""
    chosen = sglang_default_backend(
        parse_version(c.engine_version) or profile_release(beh),
        gpu.capability[0],
        mla=bool(target and target.mla),
        architecture=architecture,
        speculative_algorithm=method,
        eagle_topk=c.eagle_topk,
        auto_topk=auto_topk,
    )
    planned = chosen.rig_backend or "flash_attn"
    note = "" if chosen.rig_backend else f"; not modelled, planned as {planned}"
    defaults.append(f"attention backend {chosen.engine_name} ({chosen.why}; {chosen.source}{note})")
    return planned, chosen.engine_name


def _tree(fw: str, c: PlanChoices, k: int) -> tuple[int, int | None]:
    """SGLang's EAGLE topk and draft-token count (`speculative_hook._handle_eagle_family`):
    topk 1 is a chain of K+1 tokens; a tree needs its token count, which vLLM has no notion of."""
    topk = _positive(c.eagle_topk, "--speculative-eagle-topk") if c.eagle_topk else 1
    if fw != "sglang":
        if topk > 1 or c.num_draft_tokens:
            raise BadInput(
                "tree drafting (--speculative-eagle-topk, --speculative-num-draft-tokens) is SGLang's; vLLM drafts one chain"
            )
        return 1, None
    if topk == 1:
        return 1, None  # SGLang sets num_draft_tokens to num_steps + 1
    if c.num_draft_tokens is None:
        raise BadInput(
            "--speculative-eagle-topk > 1 needs --speculative-num-draft-tokens (the tree's size)"
        )
    tokens = _positive(c.num_draft_tokens, "--speculative-num-draft-tokens")
    if tokens > topk * k + 1:
        raise BadInput(
            f"--speculative-num-draft-tokens {tokens} exceeds the tree's {topk * k + 1} tokens (topk·steps + 1)"
        )
    return topk, tokens


def _mode(value: Mode | str | None) -> Mode | None:
    if value is None or isinstance(value, Mode):
        return value
    return Mode.parse(str(value))


def resolve_plan_options(
    choices: PlanChoices | None = None,
    *,
    default_num_speculative_tokens: int | None = None,
    architecture: str | None = None,
    head_dim: int | None = None,
    engine_batch_defaults: bool = False,
    target: TargetFacts | None = None,
    draft_method: str | None = None,
) -> PlanOptions:
    """One resolved set of plan options. The keywords are facts of the pair (the draft's own
    K, the target's architecture and head_dim; `target` and `draft_method`, what picks the vLLM
    model runner). `engine_batch_defaults`: unset max_num_seqs and
    max_num_batched_tokens take the engine's defaults for the GPU (what a server would run);
    commands that rebuild the step on this machine pass False to keep their small defaults."""
    c = choices or PlanChoices()
    framework, behavior = c.framework, c.behavior
    spec = dict(c.speculative_config or {})
    comp = dict(c.compilation_config or {})
    chosen = resolve_profile(behavior, framework) if behavior else None
    fw = framework or (chosen.framework if chosen else "vllm")
    if fw not in FRAMEWORKS:
        raise BadInput(f"unknown framework {fw!r}; choose vllm or sglang")
    beh = chosen or resolve_profile(None, fw)
    if beh.framework != fw:
        raise BadInput(f"behavior {beh.name} belongs to {beh.framework}, not {fw}")

    k = _merge(
        c.num_speculative_tokens, spec.get("num_speculative_tokens"), "num_speculative_tokens"
    )
    eagle_family = str(spec.get("method") or draft_method or "").lower() != "dflash"
    auto = (
        sglang_auto_spec(architecture)
        if fw == "sglang" and engine_batch_defaults and k is None and eagle_family
        and c.eagle_topk is None and c.num_draft_tokens is None
        else None
    )  # fmt: skip
    k = k if k is not None else (auto[0] if auto else default_num_speculative_tokens or 3)
    k = _positive(k, "num_speculative_tokens")
    tree = dataclasses.replace(c, eagle_topk=auto[1], num_draft_tokens=auto[2]) if auto else c
    topk, draft_tokens = _tree(fw, tree, k)
    method = spec.get("method")
    built = kind_for_method(str(method)) if method is not None else None
    if method is not None and (built is None or not built.supported):
        names = "/".join(s.engine_methods[0] for s in all_specs() if s.supported)
        raise BadInput(f"--speculative-config method {method!r}: eaglegraph rebuilds {names} only")

    flag_mode, json_mode = _mode(c.mode), _mode(comp.get("cudagraph_mode"))
    if flag_mode is not None and json_mode is not None and flag_mode is not json_mode:
        raise BadInput(
            "cudagraph_mode given twice with different values "
            f"({flag_mode.name} and {json_mode.name})"
        )
    # Mode.NONE is falsy: an explicit NONE must not fall through to the default
    parsed_mode = flag_mode if flag_mode is not None else json_mode
    explicit_mode = parsed_mode is not None
    explicit_breakable = True if parsed_mode is Mode.BREAKABLE else None
    if fw == "vllm" and parsed_mode is Mode.BREAKABLE:
        parsed_mode = None  # a runner flag in vLLM: the default mode, broken at attention
    if parsed_mode is None:
        parsed_mode = Mode.FULL if fw == "sglang" else Mode.FULL_AND_PIECEWISE
    compiled = _compiled(comp.get("mode"))

    sizes_flag = c.capture_sizes
    sizes_json = comp.get("cudagraph_capture_sizes")
    if sizes_json is not None:
        if not isinstance(sizes_json, list) or not all(isinstance(s, int) for s in sizes_json):
            raise BadInput(
                "--compilation-config: cudagraph_capture_sizes must be a list of integers"
            )
        sizes_json = tuple(sizes_json)
    sizes = _merge(sizes_flag, sizes_json, "capture sizes")
    max_size = comp.get("max_cudagraph_capture_size")
    if max_size is not None:
        max_size = _positive(max_size, "max_cudagraph_capture_size")

    max_bs = _sglang_max_bs(fw, c.cuda_graph_max_bs)
    method_name = str(method) if method else draft_method
    runner, runner_why = _runner(fw, beh, c, target, method_name)
    target_gpu = get_gpu(c.gpu, c.gpu_memory_gib, c.gpu_capability)
    defaults: list[str] = []
    if auto:
        defaults.append(
            f"speculative steps {auto[0]}, topk {auto[1]}, draft tokens {auto[2]} "
            f"(SGLang's auto choice for {architecture or 'this target'}; {AUTO_SPEC_SOURCE})"
        )
    backend = engine_backend(c.attention_backend) if c.attention_backend else "flash_attn"
    engine_name: str | None = None
    trtllm = True if c.trtllm_artifacts is None else c.trtllm_artifacts
    if engine_batch_defaults and fw == "vllm":
        backend, trtllm = _vllm_backend_defaults(
            c, beh, target_gpu, target, head_dim, backend, trtllm, defaults
        )
    elif engine_batch_defaults and c.attention_backend is None:
        backend, engine_name = _sglang_backend_default(
            c, beh, target_gpu, target, architecture, method_name, defaults,
            auto[1] if auto else None,
        )  # fmt: skip
    seqs_default, tokens_default = DEFAULT_MAX_NUM_SEQS[fw], DEFAULT_MAX_NUM_BATCHED_TOKENS
    if engine_batch_defaults and fw == "vllm":
        seqs_default, tokens_default = vllm_batch_defaults(target_gpu, beh)
        tokens_default = max(tokens_default, 1)
    elif engine_batch_defaults:
        tokens_default = sglang_chunked_prefill_size(target_gpu)
    max_num_seqs, max_num_batched_tokens = c.max_num_seqs, c.max_num_batched_tokens
    if max_num_seqs is None and engine_batch_defaults:
        defaults.append(
            f"max_num_seqs {seqs_default} (default for {target_gpu.name})"
            if fw == "vllm"
            else f"max_running_requests {seqs_default} (EAGLE default)"
        )
    if max_num_batched_tokens is None and engine_batch_defaults:
        defaults.append(f"max_num_batched_tokens {tokens_default} (default for {target_gpu.name})")
    seqs = _positive(max_num_seqs if max_num_seqs is not None else seqs_default, "max_num_seqs")
    tokens = _positive(
        max_num_batched_tokens if max_num_batched_tokens is not None else tokens_default,
        "max_num_batched_tokens",
    )
    if fw == "vllm" and engine_batch_defaults and max_num_seqs is None:
        seqs = min(seqs, tokens)  # the engine never defaults to more requests than tokens
    breakable = (
        breakable_enabled(explicit_breakable, architecture, beh)
        if fw == "vllm"
        else bool(explicit_breakable)
    )
    return PlanOptions(
        framework=fw,
        max_num_seqs=seqs,
        num_speculative_tokens=k,
        max_num_batched_tokens=tokens,
        mode=parsed_mode,
        attention_backend=backend,
        behavior=beh,
        capture_sizes=sizes,
        max_capture_size=max_size,
        gpu=target_gpu,
        trtllm_artifacts=trtllm,
        breakable=breakable,
        compiled=compiled,
        head_dim=head_dim,
        defaults=tuple(defaults),
        explicit_mode=explicit_mode,
        runner=runner,
        runner_why=runner_why,
        eagle_topk=topk,
        num_draft_tokens=draft_tokens,
        tp_size=_positive(c.tp_size, "tp_size") if c.tp_size is not None else 1,
        engine_attention_backend=engine_name,
        cuda_graph_max_bs=max_bs,
        attn_dp_size=_positive(c.attn_dp_size, "attn_dp_size") if c.attn_dp_size else 1,
        two_batch_overlap=_two_batch_overlap(fw, c.two_batch_overlap),
        mla=bool(target and target.mla),
    )


def _two_batch_overlap(fw: str, value: bool) -> bool:
    """SGLang's two-batch overlap, refused under vLLM (its dual-batch overlap is another
    flag, which the plan does not model)."""
    if value and fw != "sglang":
        raise BadInput(
            "--enable-two-batch-overlap is SGLang's; vLLM's --enable-dbo is not modelled"
        )
    return bool(value)


def _sglang_max_bs(fw: str, value: int | None) -> int | None:
    """SGLang's cuda_graph_max_bs, refused under vLLM, which caps its capture list through
    the compilation config instead."""
    if value is None:
        return None
    if fw != "sglang":
        raise BadInput(
            "--cuda-graph-max-bs is SGLang's; vLLM takes --compilation-config "
            "'{\"max_cudagraph_capture_size\": N}'"
        )
    return _positive(value, "--cuda-graph-max-bs")


def _compiled(value: Any) -> bool:
    """`--compilation-config {"mode": 0}` (or "NONE") turns torch.compile off."""
    if value is None:
        return True
    text = str(value).strip().upper().removeprefix("COMPILATIONMODE.")
    if text in ("0", "NONE"):
        return False
    if text in ("3", "VLLM_COMPILE", "1", "2", "STOCK_TORCH_COMPILE", "DYNAMO_TRACE_ONCE"):
        return text in ("3", "VLLM_COMPILE")
    raise BadInput(f"--compilation-config mode {value!r}: expected 0 (NONE) or 3 (VLLM_COMPILE)")


def with_mode(opts: PlanOptions, mode: Mode) -> PlanOptions:
    """The same options under another requested mode, read as `--mode` is: BREAKABLE is the
    breakable runner flag over the default mode in vLLM, and explicit BCG in SGLang."""
    if mode is Mode.BREAKABLE and opts.framework == "vllm":
        return dataclasses.replace(
            opts, mode=Mode.FULL_AND_PIECEWISE, breakable=True, explicit_mode=True
        )
    breakable = mode is Mode.BREAKABLE if opts.framework == "sglang" else opts.breakable
    return dataclasses.replace(opts, mode=mode, breakable=breakable, explicit_mode=True)
