"""Engine profiles: named sets of the framework semantics that changed between versions.

Each flag is tied to the upstream change that set it, and each profile to the engine releases it
reproduces, so `--behavior vllm-pre-39773` rebuilds the exact conditions under which an old bug
fired, a version read from a crash log picks the profile that behaves like it, and the default
(the newest profile of an engine) shows the bug is gone.

Adding a profile is one `Profile(...)` entry in `_PROFILES` (its version range must not overlap
another profile of the same engine; tests check that).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from eaglegraph.errors import BadInput
from eaglegraph.known.upstream import upstream
from eaglegraph.known.versions import VersionRange, between


@dataclass(frozen=True)
class Flag:
    name: str
    ref: str  # the upstream change that set the flag's current value
    meaning: str

    @property
    def engine(self) -> str:
        return self.ref.split("#")[0]


FLAGS = {
    f.name: f
    for f in (
        Flag(
            "draft_decode_mode_clamp",
            "vllm#39773",
            "draft decodes run FULL_DECODE_ONLY or eagerly, never PIECEWISE (PIECEWISE pads "
            "num_tokens without num_reqs, so FlashInfer-style decode reads stale kv_indptr)",
        ),
        Flag(
            "pad_last_token_indices",
            "vllm#39773",
            "prepare_eagle_inputs zeroes last_token_indices[num_reqs:]; before, a FULL "
            "draft-prefill graph gathered hidden rows at stale indices (out of bounds)",
        ),
        Flag(
            "reuse_target_attn_state",
            "vllm#40410",
            "the draft prefill is captured with the target's captured attention state and "
            "replays without rebuilding metadata",
        ),
        Flag(
            "dedicated_eagle_pool",
            "vllm#44078",
            "EAGLE graphs capture into their own graph pool (vLLM 0.22); removed in 0.23, "
            "saving 0.27 GiB on Llama-3.1-8B + EAGLE, K=5, H200",
        ),
        Flag(
            "dflash_padded_query_buffers",
            "vllm#50065",
            "DFlash query buffers (block ids, positions, query_start_loc, seq_lens, sample "
            "indices) are sized and written for the graph-padded request count; before, for "
            "the unpadded batch, so a FULL replay's padded requests read stale rows",
        ),
        Flag(
            "reset_positions_on_padded_replay",
            "sglang#10892",
            "the EAGLE draft graph runner zeroes positions[raw_bs:bs] before a padded replay; "
            "before, stale positions in padded rows indexed the KV cache out of range (IMA)",
        ),
    )
}


@dataclass(frozen=True)
class Profile:
    """One engine's semantics over a range of releases. Flag defaults are current semantics."""

    name: str
    engine: str
    summary: str
    versions: VersionRange
    draft_decode_mode_clamp: bool = True
    pad_last_token_indices: bool = True
    reuse_target_attn_state: bool = True
    dedicated_eagle_pool: bool = False
    dflash_padded_query_buffers: bool = True
    reset_positions_on_padded_replay: bool = True
    refs: tuple[str, ...] = ()
    # Why a release in `versions` behaves like this profile (shown by triage and --engine).
    version_note: str = ""
    # The model runner this profile rebuilds when its releases also shipped another one.
    runner: str | None = None

    @property
    def framework(self) -> str:
        return self.engine

    @property
    def default_pool(self) -> str:
        return "dedicated" if self.dedicated_eagle_pool else "shared"

    def flags(self) -> dict[str, bool]:
        return {name: getattr(self, name) for name in FLAGS}

    def flag_refs(self) -> dict[str, tuple[bool, str]]:
        """Each flag's value here and the change that set its current value."""
        return {name: (on, FLAGS[name].ref) for name, on in self.flags().items()}


def _pr(ref: str) -> str:
    return upstream(ref).pr


_PROFILES = (
    Profile(
        "vllm-pre-39773",
        "vllm",
        f"vLLM main between {_pr('vllm#37588')} and {_pr('vllm#39773')} (March–April 2026): "
        "EAGLE prefill graphs exist, draft decodes may run PIECEWISE, last_token_indices not "
        "padded",
        between(None, "0.20"),
        draft_decode_mode_clamp=False,
        pad_last_token_indices=False,
        reuse_target_attn_state=False,
        dedicated_eagle_pool=True,
        refs=("vllm#37588", "vllm#39773"),
        version_note=f"predates {_pr('vllm#39773')}",
        runner="mrv2",
    ),
    Profile(
        "vllm-0.20",
        "vllm",
        "vLLM 0.20: #39773 in (decode clamp, padded last_token_indices); the draft prefill "
        "still rebuilds its own metadata; dedicated EAGLE pool",
        between("0.20", "0.21"),
        reuse_target_attn_state=False,
        dedicated_eagle_pool=True,
        refs=("vllm#39773",),
        version_note="#39773 in, #40410 not yet",
    ),
    Profile(
        "vllm-0.22",
        "vllm",
        "vLLM 0.22: draft prefill reuses the target's captured attention state (#40410); "
        "EAGLE graphs in a dedicated pool",
        between("0.21", "0.23"),
        dedicated_eagle_pool=True,
        refs=("vllm#39773", "vllm#40410"),
        version_note="#40410 in, dedicated EAGLE pool (pre-#44078)",
    ),
    Profile(
        "vllm-pre-50065",
        "vllm",
        f"vLLM current semantics before {_pr('vllm#50065')}: DFlash query buffers written for "
        "the unpadded batch only (select with --behavior; the first release with the fix is "
        "not recorded here, so no version maps to it)",
        between("0.23", "0.23"),
        dflash_padded_query_buffers=False,
        refs=("vllm#39773", "vllm#40410", "vllm#44078", "vllm#50065"),
        version_note=f"predates {_pr('vllm#50065')}",
    ),
    Profile(
        "vllm-current",
        "vllm",
        "vLLM ≥ 0.23: all fixes in; EAGLE graphs share the global graph pool (#44078)",
        between("0.23", None),
        refs=("vllm#39773", "vllm#40410", "vllm#44078", "vllm#50065"),
        version_note="shared pool (#44078) and later",
    ),
    Profile(
        "sglang-pre-10892",
        "sglang",
        f"SGLang before {_pr('sglang#10892')}: padded draft replays keep stale positions in the "
        "padded rows",
        between(None, "0.5.4"),
        reset_positions_on_padded_replay=False,
        refs=("sglang#10892",),
        version_note=f"predates {_pr('sglang#10892')} (v0.5.4)",
    ),
    Profile(
        "sglang-current",
        "sglang",
        f"SGLang after {_pr('sglang#10892')}: positions of padded rows reset before replay; one "
        "shared pool",
        between("0.5.4", None),
        refs=("sglang#10892",),
        version_note=f"contains {_pr('sglang#10892')}",
    ),
)

PROFILES: dict[str, Profile] = {p.name: p for p in _PROFILES}

# The newest profile of each engine: what runs when nothing older is asked for.
DEFAULT_PROFILE = {
    engine: next(p.name for p in _PROFILES if p.engine == engine and p.versions.until is None)
    for engine in ("vllm", "sglang")
}

FLAG_FIELDS = tuple(f.name for f in fields(Profile) if f.type in ("bool", bool))


def get_profile(name: str | None, engine: str = "vllm") -> Profile:
    """A profile by name (case-insensitive), or the engine's default when no name is given."""
    if name is None:
        return PROFILES[DEFAULT_PROFILE[engine]]
    key = name.strip().lower()
    if key not in PROFILES:
        raise BadInput(f"unknown behavior {name!r}; choose one of {', '.join(PROFILES)}")
    return PROFILES[key]


def engine_profiles(engine: str) -> list[Profile]:
    return [p for p in _PROFILES if p.engine == engine]
