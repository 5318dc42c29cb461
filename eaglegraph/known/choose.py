"""From an engine version to the profile that reproduces it, with the reason in words.

Used by `--engine vllm==0.24.0` and by triage, which reads a version from a crash log: both must
pick the same profile, so the choice lives here and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass

from eaglegraph.errors import BadInput
from eaglegraph.known.profiles import (
    DEFAULT_PROFILE,
    PROFILES,
    Profile,
    engine_profiles,
    get_profile,
)
from eaglegraph.known.versions import ENGINE_LABELS, ENGINES, parse_engine, parse_version


@dataclass(frozen=True)
class ProfileChoice:
    profile: Profile
    why: str

    @property
    def name(self) -> str:
        return self.profile.name


def profile_for_version(
    engine: str | None, version: str | None, runner: str | None = None
) -> ProfileChoice:
    """The profile whose release range holds `version`; the newest one when it is unknown.

    `runner` is the model runner the log names (e.g. "mrv2"): a profile that rebuilds one runner
    says so when the version alone cannot tell which runner ran.
    """
    if engine not in ENGINES:
        return ProfileChoice(
            PROFILES[DEFAULT_PROFILE["vllm"]],
            "framework not modelled: vLLM current semantics as the reference",
        )
    label = ENGINE_LABELS[engine]
    parsed = parse_version(version)
    if parsed is None:
        return ProfileChoice(
            PROFILES[DEFAULT_PROFILE[engine]],
            f"{label} version not in the log: current semantics",
        )
    profile = next(
        (p for p in engine_profiles(engine) if parsed in p.versions),
        PROFILES[DEFAULT_PROFILE[engine]],
    )
    why = f"{label} {version}: {profile.version_note}"
    if profile.runner is not None:
        tag = profile.runner.upper()
        note = tag if runner == profile.runner else f"closest modelled profile ({tag} semantics)"
        why += f" ({note})"
    return ProfileChoice(profile, why)


def profile_for_engine(spec: str, engine: str | None = None) -> ProfileChoice:
    """`vllm==0.24.0`, `vllm 0.24.0`, `sglang==0.5.9` (or a bare version with `engine`)."""
    ev = parse_engine(spec, engine)
    return profile_for_version(ev.engine, ev.text)


def resolve_profile(name: str | None, engine: str | None = None) -> Profile:
    """A profile name (`vllm-pre-39773`) or an engine version (`vllm==0.24.0`); the engine's
    newest profile when neither is given."""
    if name is None:
        return get_profile(None, engine or "vllm")
    if name.strip().lower() in PROFILES:
        return get_profile(name)
    try:
        return profile_for_engine(name).profile
    except BadInput:
        return get_profile(name)  # raises the "unknown behavior" message, naming the choices
