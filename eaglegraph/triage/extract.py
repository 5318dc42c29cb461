"""Configuration, capture phases and health metrics, read from the lines engines print.

The sources, in the order they are trusted: the engine's own config dump (vLLM's
"LLM engine (vX) with config: ..." line, SGLang's `server_args=ServerArgs(...)`), then the
lines that record a later decision (mode downgrades, "Graph capturing finished"), then command
lines and YAML pasted by the reporter. Requested and resolved CUDA-graph modes are kept apart:
the config dump shows what was asked for, downgrade/override lines and capture progress-bar
labels show what actually ran, and the last word wins.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from eaglegraph.known.triage_signals import SignalKind
from eaglegraph.results.triage import ModeChange
from eaglegraph.triage.patterns import PatternGroup
from eaglegraph.triage.prefixes import Prefix
from eaglegraph.triage.state import ScanState
from eaglegraph.triage.values import set_missing, to_bool, to_float, to_int, to_ints, vote

PATTERNS = PatternGroup()

MODES = ("NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE", "BREAKABLE")

_BACKENDS = {
    "flash_attn": "flash_attn",
    "flashattention": "flash_attn",
    "flash_attention": "flash_attn",
    "flashattentionbackend": "flash_attn",
    "flash_attn_vllm_v1": "flash_attn",
    "fa2": "flash_attn",
    "fa3": "flash_attn",
    "fa4": "flash_attn",
    "flashinfer": "flashinfer",
    "flashinferbackend": "flashinfer",
    "flashinfer_vllm_v1": "flashinfer",
    "triton": "triton",
    "triton_attn": "triton",
    "tritonattentionbackend": "triton",
    "triton_attn_vllm_v1": "triton",
}


def normalize_backend(raw: str) -> str:
    """Map vLLM/SGLang backend spellings onto one name; unknown ones stay lower-cased."""
    key = raw.strip().strip("'\"").lower().replace(" ", "_").replace("-", "_")
    key = key.removeprefix("attentionbackendenum.").removeprefix("_backend.")
    return _BACKENDS.get(key, _BACKENDS.get(key.replace("_", ""), key))


def _method(raw: str | None) -> str | None:
    if raw is None:
        return None
    m = raw.strip("'\"").lower()
    if m in ("none", ""):
        return None
    return {"eagle2": "eagle", "nextn": "mtp"}.get(m, m)


# --- vLLM config dump ------------------------------------------------------------------------
_V_SPEC = re.compile(r"speculative_config=(?P<spec>SpeculativeConfig\([^)]*\)|None|\{[^}]*\})")
_V_TARGET = re.compile(r"(?:^|\s)model='(?P<m>[^']*)'")
_KV = re.compile(r"""["']?(?P<k>[A-Za-z_]+)["']?\s*[:=]\s*(?P<v>'[^']*'|"[^"]*"|[\w./+-]+)""")
_V_FIELDS: dict[str, tuple[str, Callable[[str], object]]] = {
    "tensor_parallel_size": ("tp", to_int),
    "pipeline_parallel_size": ("pp", to_int),
    "data_parallel_size": ("dp", to_int),
    "enforce_eager": ("enforce_eager", to_bool),
    "kv_cache_dtype": ("kv_cache_dtype", str),
    "quantization": ("quantization", str),
    "max_num_seqs": ("max_num_seqs", to_int),
}
_V_MODE = re.compile(
    r"cudagraph_mode['\"]?\s*[:=]\s*<?(?:CUDAGraphMode\.)?['\"]?(?P<mode>[A-Z_]{4,})"
)
_V_SIZES = re.compile(
    r"(?:cudagraph_capture_sizes|capture_sizes|cuda_graph_sizes)['\"]?\s*[:=]\s*\[(?P<sizes>[\d,\s]*)\]"
)
_V_LEGACY = re.compile(
    r"['\"](?P<k>use_cudagraph|full_cuda_graph)['\"]:\s*(?P<v>True|False|true|false)"
)


def _apply_spec(state: ScanState, body: str) -> None:
    cfg = state.config
    pairs = {m.group("k"): m.group("v").strip("'\"") for m in _KV.finditer(body)}
    set_missing(cfg, "spec_method", _method(pairs.get("method")))
    draft = pairs.get("model") or pairs.get("draft_model")
    if draft and draft.lower() != "none":
        set_missing(cfg, "draft_model", draft)
    k = pairs.get("num_spec_tokens") or pairs.get("num_speculative_tokens")
    set_missing(cfg, "num_spec_tokens", to_int(k))


def _apply_compilation(state: ScanState, text: str, requested: bool = True) -> None:
    cfg = state.config
    m = _V_MODE.search(text)
    if m and m.group("mode") in MODES:
        set_missing(cfg, "cudagraph_mode_requested", m.group("mode"), override=True)
    m = _V_SIZES.search(text)
    if m:
        set_missing(cfg, "capture_sizes", sorted(set(to_ints(m.group("sizes")))), override=True)
    if cfg.cudagraph_mode_requested is None:
        legacy = {
            lm.group("k"): lm.group("v") in ("True", "true") for lm in _V_LEGACY.finditer(text)
        }
        if "use_cudagraph" in legacy:
            if not legacy["use_cudagraph"]:
                cfg.cudagraph_mode_requested = "NONE"
            else:
                full = legacy.get("full_cuda_graph", False)
                cfg.cudagraph_mode_requested = "FULL" if full else "PIECEWISE"


@PATTERNS.on(
    "cfg.vllm-engine",
    r"LLM engine \(v(?P<ver>[^)\s]+)\) with config: (?P<body>.*)",
    anchors=("LLM engine",),
)
def _vllm_engine(state: ScanState, line: int, text: str, m: re.Match[str], prefix: Prefix) -> None:
    cfg = state.config
    vote(state, "vllm", 5)
    set_missing(cfg, "version", m.group("ver"))
    body = m.group("body")
    tm = _V_TARGET.search(body)
    if tm:
        set_missing(cfg, "target_model", tm.group("m"))
    sm = _V_SPEC.search(body)
    if sm and sm.group("spec") != "None":
        _apply_spec(state, sm.group("spec"))
    for km in _KV.finditer(body):
        spec = _V_FIELDS.get(km.group("k"))
        if spec:
            name, conv = spec
            set_missing(cfg, name, conv(km.group("v").strip("'\"")))
    _apply_compilation(state, body)
    if cfg.enforce_eager:
        set_missing(cfg, "cudagraph_mode_resolved", "NONE", override=True)
    if "V1 LLM engine" in text and cfg.runner is None:
        cfg.runner = "v1"
    elif "an LLM engine" in text and cfg.runner is None:
        cfg.runner = "v0"


def _version(framework: str):
    def handle(state: ScanState, line: int, text: str, m: re.Match[str], prefix: Prefix) -> None:
        vote(state, framework, 3)
        if state.config.framework in (None, framework):
            set_missing(state.config, "version", m.group("ver"))

    return handle


PATTERNS.register(
    "cfg.vllm-version",
    r"(?:vLLM(?: API server)? [Vv]ersion\s*:?\s*|vllm(?:==|\s+[Vv]ersion:?\s+)|vllm-openai:v?)"
    r"(?P<ver>\d+\.\d+[\w.+-]*)",
    _version("vllm"),
    anchors=("LLM API server", "LLM Version", "LLM version"),
    extra=("vllm==", "vllm version", "vllm-openai:"),
)
PATTERNS.register(
    "cfg.sglang-version",
    r"(?:sglang(?:==|:\s+|\s+[Vv]ersion:?\s+|\s+v)|SGLang v|lmsysorg/sglang:v?)"
    r"(?P<ver>\d+\.\d+[\w.+-]*)",
    _version("sglang"),
    extra=("sglang==", "sglang: ", "sglang version", "sglang v", "SGLang v", "lmsysorg/sglang:"),
)
PATTERNS.register(
    "cfg.trtllm-version",
    r"TensorRT-LLM(?: [Vv]ersion)?:?\s+v?(?P<ver>\d+\.\d+\.\d+\w*)",
    _version("trtllm"),
    anchors=("RT-LLM",),
)

# --- SGLang server args and CLI flags (vLLM and SGLang) --------------------------------------
_S_KV = re.compile(
    r"\b(?P<k>speculative_\w+|attention_backend|decode_attention_backend|prefill_attention_backend|"
    r"cuda_graph_\w+|disable_cuda_graph|mem_fraction_static|tp_size|dp_size|ep_size|pp_size|"
    r"enable_dp_attention|kv_cache_dtype|page_size|enable_expert_distribution_metrics|model_path|"
    r"max_running_requests|quantization|enable_breakable_cuda_graph|enforce_eager)="
    r"(?P<v>'[^']*'|\[[^\]]*\]|[\w.-]+)"
)


def _apply_sglang(state: ScanState, pairs: dict[str, str]) -> None:
    cfg = state.config
    set_missing(cfg, "target_model", pairs.get("model_path"))
    set_missing(cfg, "spec_method", _method(pairs.get("speculative_algorithm")))
    draft = pairs.get("speculative_draft_model_path")
    if draft and draft.lower() != "none":
        set_missing(cfg, "draft_model", draft)
    set_missing(cfg, "num_spec_tokens", to_int(pairs.get("speculative_num_steps")))
    set_missing(cfg, "topk", to_int(pairs.get("speculative_eagle_topk")))
    set_missing(cfg, "num_draft_tokens", to_int(pairs.get("speculative_num_draft_tokens")))
    backend = pairs.get("decode_attention_backend") or pairs.get("attention_backend")
    if backend and backend.lower() != "none":
        set_missing(cfg, "attention_backend_raw", backend)
        set_missing(cfg, "attention_backend", normalize_backend(backend))
    set_missing(cfg, "tp", to_int(pairs.get("tp_size")))
    set_missing(cfg, "dp", to_int(pairs.get("dp_size")))
    set_missing(cfg, "ep", to_int(pairs.get("ep_size")))
    set_missing(cfg, "pp", to_int(pairs.get("pp_size")))
    set_missing(cfg, "dp_attention", to_bool(pairs.get("enable_dp_attention")))
    kv = pairs.get("kv_cache_dtype")
    if kv and kv.lower() != "auto":
        set_missing(cfg, "kv_cache_dtype", kv)
    quant = pairs.get("quantization")
    if quant and quant.lower() != "none":
        set_missing(cfg, "quantization", quant)
    set_missing(cfg.memory, "mem_fraction_static", to_float(pairs.get("mem_fraction_static")))
    set_missing(cfg, "max_num_seqs", to_int(pairs.get("max_running_requests")))
    set_missing(cfg, "cuda_graph_max_bs", to_int(pairs.get("cuda_graph_max_bs")))
    set_missing(
        cfg, "expert_distribution_metrics", to_bool(pairs.get("enable_expert_distribution_metrics"))
    )
    bs = pairs.get("cuda_graph_bs")
    if bs and bs.startswith("["):
        set_missing(cfg, "capture_sizes", sorted(set(to_ints(bs))))
    disabled = to_bool(pairs.get("disable_cuda_graph"))
    set_missing(cfg, "disable_cuda_graph", disabled)
    if disabled:
        set_missing(cfg, "cudagraph_mode_requested", "NONE", override=True)
    elif disabled is False or cfg.spec_method:
        set_missing(cfg, "cudagraph_mode_requested", "FULL")


@PATTERNS.on(
    "cfg.sglang-args",
    r"ServerArgs\((?P<body>.*)",
    anchors=("ServerArgs(",),
)
def _sglang_args(state: ScanState, line: int, text: str, m: re.Match[str], prefix: Prefix) -> None:
    vote(state, "sglang", 5)
    pairs = {km.group("k"): km.group("v").strip("'\"") for km in _S_KV.finditer(m.group("body"))}
    _apply_sglang(state, pairs)


_FLAG = re.compile(
    r"(?:^|\s)(?P<flag>--[\w.-]+|-tp|-dp|-O)(?:[= ]+(?P<v>'[^']*'|\"[^\"]*\"|\{[^}]*\}|[^\s-][^\s]*))?"
)
_SGLANG_FLAGS = {
    "speculative-algorithm": "speculative_algorithm",
    "speculative-draft-model-path": "speculative_draft_model_path",
    "speculative-draft-model": "speculative_draft_model_path",
    "speculative-num-steps": "speculative_num_steps",
    "speculative-eagle-topk": "speculative_eagle_topk",
    "speculative-num-draft-tokens": "speculative_num_draft_tokens",
    "attention-backend": "attention_backend",
    "decode-attention-backend": "decode_attention_backend",
    "tp-size": "tp_size",
    "tp": "tp_size",
    "dp-size": "dp_size",
    "dp": "dp_size",
    "ep-size": "ep_size",
    "cuda-graph-max-bs": "cuda_graph_max_bs",
    "max-running-requests": "max_running_requests",
    "mem-fraction-static": "mem_fraction_static",
    "kv-cache-dtype": "kv_cache_dtype",
    "quantization": "quantization",
    "model-path": "model_path",
    "enable-dp-attention": "enable_dp_attention",
    "disable-cuda-graph": "disable_cuda_graph",
    "enable-expert-distribution-metrics": "enable_expert_distribution_metrics",
}


@PATTERNS.on(
    "cfg.cli",
    r"(?:^|\s)--(?:speculative[\w-]*|compilation[-_]config[\w.-]*|num-speculative-tokens|"
    r"tensor-parallel-size|tp-size|tp|dp-size|data-parallel-size|attention-backend|"
    r"cuda-graph-max-bs|disable-cuda-graph|enforce-eager|max-num-seqs|max-running-requests|"
    r"kv-cache-dtype|gpu-memory-utilization|mem-fraction-static|enable-dp-attention)\b",
    extra=("--",),
)
def _cli_flags(state: ScanState, line: int, text: str, m: re.Match[str], prefix: Prefix) -> None:
    """`vllm serve ... --flag value` and `python -m sglang.launch_server --flag value`."""
    cfg = state.config
    if "sglang" in text:
        vote(state, "sglang", 2)
    elif "vllm" in text:
        vote(state, "vllm", 2)
    sglang_pairs: dict[str, str] = {}
    for fm in _FLAG.finditer(text):
        flag = fm.group("flag").lstrip("-").replace("_", "-")
        value = (fm.group("v") or "").strip("'\"")
        if flag in ("speculative-config",) and value.startswith("{"):
            _apply_spec(state, value)
        elif flag in ("compilation-config", "O") and value.startswith("{"):
            _apply_compilation(state, value)
        elif flag.startswith("compilation-config.cudagraph-mode") and value.upper() in MODES:
            cfg.cudagraph_mode_requested = value.upper()
        elif flag == "num-speculative-tokens":
            set_missing(cfg, "num_spec_tokens", to_int(value))
        elif flag == "speculative-model" and value:
            set_missing(cfg, "draft_model", value)
        elif flag in ("tensor-parallel-size",) or (flag == "tp" and "vllm" in text):
            set_missing(cfg, "tp", to_int(value))
        elif flag in ("data-parallel-size",):
            set_missing(cfg, "dp", to_int(value))
        elif flag == "enforce-eager":
            cfg.enforce_eager = True
            cfg.cudagraph_mode_resolved = "NONE"
        elif flag == "max-num-seqs":
            set_missing(cfg, "max_num_seqs", to_int(value))
        elif flag == "gpu-memory-utilization":
            set_missing(cfg.memory, "gpu_memory_utilization", to_float(value))
        elif flag == "attention-backend" and "sglang" not in text:
            cfg.attention_backend_raw = value
            cfg.attention_backend = normalize_backend(value)
        elif flag in _SGLANG_FLAGS:
            sglang_pairs[_SGLANG_FLAGS[flag]] = value or "True"
    if sglang_pairs:
        if "speculative_algorithm" in sglang_pairs or "sglang" in text:
            _apply_sglang(state, sglang_pairs)
        else:
            for key in ("kv_cache_dtype", "quantization"):
                set_missing(cfg, key, sglang_pairs.get(key))


# --- mode resolution -------------------------------------------------------------------------


def _mode_change(state: ScanState, line: int, frm: str | None, to: str | None, why: str) -> None:
    cfg = state.config
    frm = frm if frm in MODES else None
    to = to if to in MODES else None
    cfg.mode_changes.append(ModeChange(line, frm, to, why[:300]))
    if len(cfg.mode_changes) > 32:
        del cfg.mode_changes[1]
    if frm and cfg.cudagraph_mode_requested is None:
        cfg.cudagraph_mode_requested = frm
    if to:
        cfg.cudagraph_mode_resolved = to


@PATTERNS.on(
    "mode.downgrade",
    r"CUDAGraphMode\.(?P<from>[A-Z_]+) is not supported with (?:spec-decode|speculative decoding)"
    r"(?: for attention backend (?P<backend>\w+))?(?:[^\n]{0,400}?setting cudagraph_mode=(?P<to>[A-Z_]+))?",
    anchors=("CUDAGraphMode",),
)
def _downgrade(state: ScanState, line: int, text: str, m: re.Match[str], prefix: Prefix) -> None:
    vote(state, "vllm", 2)
    backend = m.group("backend")
    if backend and state.config.attention_backend is None:
        state.config.attention_backend_raw = backend
        state.config.attention_backend = normalize_backend(backend)
    _mode_change(state, line, m.group("from"), m.group("to"), text.strip())
    state.add(line, text.strip(), "mode.downgrade", SignalKind.CONTEXT, m.groupdict())


@PATTERNS.on(
    "mode.override",
    r"Overriding cudagraph_mode (?:from (?P<from>\w+) )?to (?P<to>\w+)|"
    r"[Ss]etting cudagraph_mode=(?P<to2>[A-Z_]+)|"
    r"cudagraph_mode (?:is |was )?(?:set|changed|forced|downgraded|overridden) "
    r"(?:from (?P<from2>\w+) )?to (?P<to3>[A-Z_]+)",
    extra=("_mode", "Overriding"),
)
def _override(state: ScanState, line: int, text: str, m: re.Match[str], prefix: Prefix) -> None:
    if "is not supported with" in text:
        return  # the downgrade handler owns this line
    frm = m.group("from") or m.group("from2")
    to = m.group("to") or m.group("to2") or m.group("to3")
    _mode_change(state, line, frm, to, text.strip())
    state.add(line, text.strip(), "mode.override", SignalKind.CONTEXT, {"from": frm, "to": to})


@PATTERNS.on(
    "mode.skip-capture",
    r"Skipping CUDA graph capture",
    anchors=("CUDA",),
)
def _skip_capture(state: ScanState, line: int, text: str, m: re.Match[str], prefix: Prefix) -> None:
    _mode_change(state, line, None, "NONE", text.strip())


# --- attention backend and GPU ---------------------------------------------------------------


@PATTERNS.on(
    "cfg.attention-backend",
    r"Using (?:AttentionBackendEnum\.)?(\w+) attention backend|"
    r"Using AttentionBackendEnum\.(\w+) backend|"
    r"Using (Flash ?Attention(?:-\d)?|FlashInfer|XFormers|Triton\w*|FlashMLA|TRTLLM\w*|"
    r"CUTLASS_MLA|FLASH_ATTN|FLASHINFER|TRITON_ATTN)(?: [Bb]ackend)?\b|"
    r"Attention backend not specified\. Use (\w+) backend by default|"
    r"VLLM_ATTENTION_BACKEND=(\w+)|attention_backend['\"]?\s*[:=]\s*['\"]?(\w+)",
    anchors=("backend", "Backend", "BACKEND"),
)
def _backend(state: ScanState, line: int, text: str, m: re.Match[str], prefix: Prefix) -> None:
    raw = next(v for v in m.groups() if v)
    state.config.attention_backend_raw = raw
    state.config.attention_backend = normalize_backend(raw)


@PATTERNS.on(
    "cfg.flashinfer-resolved",
    r"FlashInfer resolved query dtypes:(?:.*?decode_backend=(?P<db>\w+))?(?:.*?arch=(?P<arch>sm_?\d+\w*))?",
    anchors=("FlashInfer resolved",),
)
def _flashinfer(state: ScanState, line: int, text: str, m: re.Match[str], prefix: Prefix) -> None:
    cfg = state.config
    set_missing(cfg, "decode_backend", m.group("db"))
    set_missing(cfg, "gpu_arch", m.group("arch"))
    if cfg.attention_backend is None:
        cfg.attention_backend, cfg.attention_backend_raw = "flashinfer", "FlashInfer"


@PATTERNS.on(
    "cfg.gpu",
    r"GPU \d+(?:,\s?\d+)*: (?P<name>(?:NVIDIA|Tesla|Quadro|AMD|Instinct|Radeon|GeForce|RTX|[HABL]\d{2,3}|"
    r"GB\d{3}|MI\d{3})[^(\n:]*?)\s*(?:\(UUID[^)]*\))?\s*$|"
    r"device_name=(?P<dn>[A-Za-z0-9_-]+)|"
    r"GPU \d+ has a total capacity of (?P<cap>[\d.]+) ?GiB|"
    r"Compute Capability:?\s*(?P<cc>\d+\.\d+)|"
    r"^\|\s+\d+\s+(?P<smi>NVIDIA [\w .-]+?)\s{2,}",
    anchors=("Capability", "VIDIA"),
    extra=("_name=",),
    anchor_res=(r"GPU \d",),
)
def _gpu(state: ScanState, line: int, text: str, m: re.Match[str], prefix: Prefix) -> None:
    cfg = state.config
    name = m.group("name") or m.group("smi")
    if name:
        cfg.gpu = cfg.gpu or name.strip()
    dn = m.group("dn")
    if dn and cfg.gpu is None:
        cfg.gpu = dn.replace("_", " ")
    cap = to_float(m.group("cap"))
    if cap:
        cfg.gpu_memory_gib = cfg.gpu_memory_gib or cap
    cc = m.group("cc")
    if cc and cfg.gpu_arch is None:
        cfg.gpu_arch = "sm" + cc.replace(".", "")


# --- TensorRT-LLM YAML (extra_llm_api_options) and draft architecture -------------------------


@PATTERNS.on(
    "cfg.yaml",
    r"^\s*(?P<k>decoding_type|max_draft_len|num_nextn_predict_layers|speculative_model_dir|"
    r"speculative_model|enable_attention_dp|tensor_parallel_size|batch_sizes|max_batch_size|"
    r"cuda_graph_config|dtype)\s*:\s*(?P<v>.*)$",
    extra=(
        "decoding_type",
        "max_draft_len",
        "num_nextn",
        "speculative_model",
        "enable_attention_dp",
        "tensor_parallel_size",
        "batch_sizes",
        "max_batch_size",
        "cuda_graph_config",
        "dtype",
    ),
)
def _yaml(state: ScanState, line: int, text: str, m: re.Match[str], prefix: Prefix) -> None:
    cfg = state.config
    key, val = m.group("k"), m.group("v").strip().strip("'\"")
    if key == "decoding_type":
        set_missing(cfg, "spec_method", _method(val))
        vote(state, "trtllm")
    elif key in ("max_draft_len", "num_nextn_predict_layers"):
        set_missing(cfg, "num_spec_tokens", to_int(val))
    elif key in ("speculative_model_dir", "speculative_model"):
        set_missing(cfg, "draft_model", val or None)
    elif key == "enable_attention_dp":
        set_missing(cfg, "dp_attention", to_bool(val))
        vote(state, "trtllm")
    elif key == "tensor_parallel_size":
        set_missing(cfg, "tp", to_int(val))
    elif key == "batch_sizes" and val.startswith("["):
        set_missing(cfg, "capture_sizes", sorted(set(to_ints(val))))
    elif key == "max_batch_size":
        set_missing(cfg, "max_num_seqs", to_int(val))
    elif key == "cuda_graph_config":
        vote(state, "trtllm")
        set_missing(cfg, "cudagraph_mode_requested", "FULL")
    elif key == "dtype" and val in ("fp8", "nvfp4", "int8"):
        set_missing(cfg, "kv_cache_dtype", val)


@PATTERNS.on(
    "cfg.draft-arch",
    r"Load weight end\. type=(?P<arch>\w+)",
    anchors=("Load weight",),
)
def _draft_arch(state: ScanState, line: int, text: str, m: re.Match[str], prefix: Prefix) -> None:
    arch = m.group("arch")
    if "Eagle3" in arch or "EAGLE3" in arch:
        set_missing(state.config, "spec_method", "eagle3")
    elif "Eagle" in arch or "EAGLE" in arch:
        set_missing(state.config, "spec_method", "eagle")
    elif "MTP" in arch or "NextN" in arch:
        set_missing(state.config, "spec_method", "mtp")


@PATTERNS.on(
    "cfg.mrv2",
    r"VLLM_USE_V2_MODEL_RUNNER['\"]?\s*[=:]\s*['\"]?1",
    extra=("_MODEL_RUNNER",),
)
def _mrv2(state: ScanState, line: int, text: str, m: re.Match[str], prefix: Prefix) -> None:
    state.config.runner = "mrv2"
