"""The options every command shares (inspect, capture, probe, memdiff), resolved once.

They can come as flags or as vLLM-style `--speculative-config` / `--compilation-config` JSON
(what users paste from their launch command). A flag and a JSON key that disagree is an
error rather than a silent precedence rule.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from eaglegraph.errors import BadInput
from eaglegraph.known.choose import resolve_profile
from eaglegraph.known.profiles import Profile
from eaglegraph.pair.kinds import all_specs, kind_for_method
from eaglegraph.rig.modes import Mode

ATTENTION_BACKENDS = ("flash_attn", "flashinfer", "triton")
FRAMEWORKS = ("vllm", "sglang")
DEFAULT_MAX_NUM_SEQS = {"vllm": 128, "sglang": 48}


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

    @property
    def metadata_style(self) -> str:
        """FlashInfer keeps CSR metadata; flash-attn and Triton hold qsl/seq_lens/block table."""
        return "flashinfer" if self.attention_backend == "flashinfer" else "flash_attn"


def _parse_json(text: str | None, flag: str) -> dict[str, Any]:
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{flag}: invalid JSON at column {exc.colno}: {exc.msg}") from None
    if not isinstance(value, dict):
        raise BadInput(f"{flag}: expected a JSON object")
    return value


def _merge(flag_value: Any, json_value: Any, name: str) -> Any:
    if flag_value is not None and json_value is not None and flag_value != json_value:
        raise BadInput(f"{name} given twice with different values ({flag_value} and {json_value})")
    return flag_value if flag_value is not None else json_value


def _positive(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise BadInput(f"{name} must be a positive integer, found {value!r}")
    return value


def resolve_plan_options(
    *,
    framework: str | None = None,
    max_num_seqs: int | None = None,
    num_speculative_tokens: int | None = None,
    max_num_batched_tokens: int | None = None,
    mode: str | None = None,
    attention_backend: str | None = None,
    behavior: str | None = None,
    capture_sizes: str | None = None,
    speculative_config: str | None = None,
    compilation_config: str | None = None,
    default_num_speculative_tokens: int | None = None,
) -> PlanOptions:
    spec = _parse_json(speculative_config, "--speculative-config")
    comp = _parse_json(compilation_config, "--compilation-config")
    chosen = resolve_profile(behavior, framework) if behavior else None
    fw = framework or (chosen.framework if chosen else "vllm")
    if fw not in FRAMEWORKS:
        raise BadInput(f"unknown framework {fw!r}; choose vllm or sglang")
    beh = chosen or resolve_profile(None, fw)
    if beh.framework != fw:
        raise BadInput(f"behavior {beh.name} belongs to {beh.framework}, not {fw}")

    k = _merge(num_speculative_tokens, spec.get("num_speculative_tokens"), "num_speculative_tokens")
    k = k if k is not None else (default_num_speculative_tokens or 3)
    k = _positive(k, "num_speculative_tokens")
    method = spec.get("method")
    built = kind_for_method(str(method)) if method is not None else None
    if method is not None and (built is None or not built.supported):
        names = "/".join(s.engine_methods[0] for s in all_specs() if s.supported)
        raise BadInput(f"--speculative-config method {method!r}: eaglegraph rebuilds {names} only")

    mode_text = _merge(mode, comp.get("cudagraph_mode"), "cudagraph_mode")
    parsed_mode = Mode.parse(str(mode_text)) if mode_text is not None else None
    if parsed_mode is None:
        parsed_mode = Mode.FULL if fw == "sglang" else Mode.FULL_AND_PIECEWISE

    sizes_flag = None
    if capture_sizes is not None:
        try:
            sizes_flag = tuple(int(s) for s in capture_sizes.replace(" ", "").split(",") if s)
        except ValueError:
            raise BadInput(
                f"--capture-sizes: expected comma-separated integers, got {capture_sizes!r}"
            ) from None
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

    backend = attention_backend or "flash_attn"
    if backend not in ATTENTION_BACKENDS:
        raise BadInput(
            f"unknown attention backend {backend!r}; choose {', '.join(ATTENTION_BACKENDS)}"
        )
    seqs = _positive(
        max_num_seqs if max_num_seqs is not None else DEFAULT_MAX_NUM_SEQS[fw], "max_num_seqs"
    )
    tokens = _positive(max_num_batched_tokens or 8192, "max_num_batched_tokens")
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
    )
