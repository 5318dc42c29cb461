"""Behaviors: named profiles of framework semantics that changed between versions.

Each flag is tied to the PR that changed it, so `--behavior vllm-pre-39773` rebuilds the
exact conditions under which an old bug fired, and the default (current) shows it is gone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from eaglegraph.errors import BadInput


@dataclass(frozen=True)
class Flag:
    name: str
    ref: str
    meaning: str


FLAGS = {
    "draft_decode_mode_clamp": Flag(
        "draft_decode_mode_clamp",
        "vllm#39773",
        "draft decodes run FULL_DECODE_ONLY or eagerly, never PIECEWISE (PIECEWISE pads "
        "num_tokens without num_reqs, so FlashInfer-style decode reads stale kv_indptr)",
    ),
    "pad_last_token_indices": Flag(
        "pad_last_token_indices",
        "vllm#39773",
        "prepare_eagle_inputs zeroes last_token_indices[num_reqs:]; before, a FULL draft-prefill "
        "graph gathered hidden rows at stale indices (out of bounds)",
    ),
    "reuse_target_attn_state": Flag(
        "reuse_target_attn_state",
        "vllm#40410",
        "the draft prefill is captured with the target's captured attention state and replays "
        "without rebuilding metadata",
    ),
    "dedicated_eagle_pool": Flag(
        "dedicated_eagle_pool",
        "vllm#44078",
        "EAGLE graphs capture into their own graph pool (vLLM 0.22); removed in 0.23, "
        "saving 0.27 GiB on Llama-3.1-8B + EAGLE, K=5, H200",
    ),
    "reset_positions_on_padded_replay": Flag(
        "reset_positions_on_padded_replay",
        "sglang#10892",
        "the EAGLE draft graph runner zeroes positions[raw_bs:bs] before a padded replay; before, "
        "stale positions in padded rows indexed the KV cache out of range (IMA)",
    ),
}


@dataclass(frozen=True)
class Behavior:
    name: str
    framework: str
    summary: str
    draft_decode_mode_clamp: bool = True
    pad_last_token_indices: bool = True
    reuse_target_attn_state: bool = True
    dedicated_eagle_pool: bool = False
    reset_positions_on_padded_replay: bool = True
    refs: tuple[str, ...] = field(default=())

    @property
    def default_pool(self) -> str:
        return "dedicated" if self.dedicated_eagle_pool else "shared"

    def flags(self) -> dict[str, bool]:
        return {name: getattr(self, name) for name in FLAGS}


BEHAVIORS: dict[str, Behavior] = {
    b.name: b
    for b in (
        Behavior(
            "vllm-pre-39773",
            "vllm",
            "vLLM main between PR #37588 and PR #39773 (March–April 2026): EAGLE prefill graphs "
            "exist, draft decodes may run PIECEWISE, last_token_indices not padded",
            draft_decode_mode_clamp=False,
            pad_last_token_indices=False,
            reuse_target_attn_state=False,
            dedicated_eagle_pool=True,
            refs=("vllm#37588", "vllm#39773"),
        ),
        Behavior(
            "vllm-0.20",
            "vllm",
            "vLLM 0.20: #39773 in (decode clamp, padded last_token_indices); the draft prefill "
            "still rebuilds its own metadata; dedicated EAGLE pool",
            reuse_target_attn_state=False,
            dedicated_eagle_pool=True,
            refs=("vllm#39773",),
        ),
        Behavior(
            "vllm-0.22",
            "vllm",
            "vLLM 0.22: draft prefill reuses the target's captured attention state (#40410); "
            "EAGLE graphs in a dedicated pool",
            dedicated_eagle_pool=True,
            refs=("vllm#39773", "vllm#40410"),
        ),
        Behavior(
            "vllm-current",
            "vllm",
            "vLLM ≥ 0.23: all fixes in; EAGLE graphs share the global graph pool (#44078)",
            refs=("vllm#39773", "vllm#40410", "vllm#44078"),
        ),
        Behavior(
            "sglang-pre-10892",
            "sglang",
            "SGLang before PR #10892: padded draft replays keep stale positions in the padded rows",
            reset_positions_on_padded_replay=False,
            refs=("sglang#10892",),
        ),
        Behavior(
            "sglang-current",
            "sglang",
            "SGLang after PR #10892: positions of padded rows reset before replay; one shared pool",
            refs=("sglang#10892",),
        ),
    )
}

DEFAULT_BEHAVIOR = {"vllm": "vllm-current", "sglang": "sglang-current"}


def get_behavior(name: str | None, framework: str = "vllm") -> Behavior:
    if name is None:
        return BEHAVIORS[DEFAULT_BEHAVIOR[framework]]
    key = name.strip().lower()
    if key not in BEHAVIORS:
        raise BadInput(f"unknown behavior {name!r}; choose one of {', '.join(BEHAVIORS)}")
    return BEHAVIORS[key]
