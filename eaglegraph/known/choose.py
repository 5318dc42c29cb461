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
from eaglegraph.known.versions import (
    ENGINE_LABELS,
    ENGINES,
    Version,
    parse_engine,
    parse_version,
    version_text,
)

# The oldest release a profile models (vLLM 0.11, the first of `vllm-mrv1-pre-29845`, V1 engine
# only; SGLang 0.5, the 0.5.x code of shared/research/sglang.md): older ones, the V0 engine's
# among them, are planned under the oldest profile, with a warning that names it.
OLDEST_MODELLED: dict[str, Version] = {"vllm": (0, 11, 0), "sglang": (0, 5, 0)}
# The newest release read (vLLM 0.33.0, SGLang 0.5.23): newer ones are planned as it, with a note.
NEWEST_MODELLED: dict[str, Version] = {"vllm": (0, 33, 0), "sglang": (0, 5, 23)}


@dataclass(frozen=True)
class ProfileChoice:
    profile: Profile
    why: str
    # a release outside the modelled range: the warning (older) or note (newer) to show
    range_note: str | None = None

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
    return ProfileChoice(profile, why, release_range_note(engine, parsed, profile))


def release_range_note(engine: str, version: Version, profile: Profile) -> str | None:
    """Why `version` is planned under `profile` when it lies outside the modelled releases."""
    label = ENGINE_LABELS[engine]
    oldest, newest = OLDEST_MODELLED[engine], NEWEST_MODELLED[engine]
    if version < oldest:
        return (
            f"{label} {version_text(version)} is older than the oldest modelled release "
            f"({version_text(oldest)}): planned under {profile.name}, the closest profile; "
            "its graphs may differ"
        )
    if version > newest and (version[0], version[1]) != (newest[0], newest[1]):
        return (
            f"{label} {version_text(version)} is newer than the newest modelled release "
            f"({version_text(newest)}): planned as {version_text(newest)} ({profile.name})"
        )
    return None


def profile_release(profile: Profile) -> Version:
    """The release a profile is named for, when a plan knows the profile but not the exact
    version (`--behavior vllm-0.23`): the version in its name, else the first of its range,
    else the last before its range ends; a profile no release maps to (one change undone on
    current semantics) stands for the newest."""
    named = parse_version(profile.name.split("-", 1)[-1])
    if named is not None and named in profile.versions:
        return named
    if profile.versions.since is not None and profile.versions.since == profile.versions.until:
        return NEWEST_MODELLED[profile.engine]
    if profile.versions.since is not None:
        return profile.versions.since
    until = profile.versions.until or NEWEST_MODELLED[profile.engine]
    return (until[0], until[1] - 1, 0) if until[1] > 0 else until


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
