"""Engine knowledge as data: profiles, versions, upstream changes and hazards.

The bottom layer: every other package may read it, and it imports nothing from them (only the
`errors` leaf). Nothing outside this package spells an upstream PR number or fix text.
"""

from eaglegraph.known.choose import (
    ProfileChoice,
    profile_for_engine,
    profile_for_version,
    resolve_profile,
)
from eaglegraph.known.hazards import HAZARDS, Hazard, hazard, hazard_for_buffer, hazards_affecting
from eaglegraph.known.profiles import (
    DEFAULT_PROFILE,
    FLAGS,
    PROFILES,
    Flag,
    Profile,
    engine_profiles,
    get_profile,
)
from eaglegraph.known.upstream import UPSTREAM, Upstream, cite, upstream
from eaglegraph.known.versions import (
    EngineVersion,
    Version,
    VersionRange,
    parse_engine,
    parse_version,
)

__all__ = [
    "DEFAULT_PROFILE",
    "FLAGS",
    "HAZARDS",
    "PROFILES",
    "UPSTREAM",
    "EngineVersion",
    "Flag",
    "Hazard",
    "Profile",
    "ProfileChoice",
    "Upstream",
    "Version",
    "VersionRange",
    "cite",
    "engine_profiles",
    "get_profile",
    "hazard",
    "hazard_for_buffer",
    "hazards_affecting",
    "parse_engine",
    "parse_version",
    "profile_for_engine",
    "profile_for_version",
    "resolve_profile",
    "upstream",
]
