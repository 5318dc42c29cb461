"""Engine versions: parse what users and logs write, and ranges that profiles and hazards cover.

Release strings come in many spellings (`0.22.1rc1.dev23+g6bdabbad5`, `v0.5.4.post1`, `0.20`);
only (major, minor, patch) decides semantics, so that is all a `Version` keeps.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from eaglegraph.errors import BadInput

Version = tuple[int, int, int]

ENGINES = ("vllm", "sglang")
ENGINE_LABELS = {"vllm": "vLLM", "sglang": "SGLang"}

_VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?")
_SPEC = re.compile(r"^\s*([A-Za-z][\w-]*)\s*(?:==|=|@|\s)\s*(\S+)\s*$")


def parse_version(text: str | None) -> Version | None:
    """'0.22.1rc1.dev23+g6bdabbad5' -> (0, 22, 1); 'v0.5.4.post1' -> (0, 5, 4); junk -> None."""
    if not text:
        return None
    m = _VERSION.match(text.strip())
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def version_text(v: Version) -> str:
    """(0, 20, 0) -> '0.20'; (0, 5, 4) -> '0.5.4'."""
    return ".".join(str(n) for n in (v[:2] if v[2] == 0 else v))


@dataclass(frozen=True)
class VersionRange:
    """Releases from `since` (inclusive) up to `until` (exclusive); None leaves a side open."""

    since: Version | None = None
    until: Version | None = None

    def __contains__(self, v: Version) -> bool:
        return (self.since is None or v >= self.since) and (self.until is None or v < self.until)

    def overlaps(self, other: VersionRange) -> bool:
        lo = max(self.since or (0, 0, 0), other.since or (0, 0, 0))
        his = [u for u in (self.until, other.until) if u is not None]
        return not his or lo < min(his)

    def describe(self) -> str:
        if self.since and self.until:
            return f"≥ {version_text(self.since)}, < {version_text(self.until)}"
        if self.since:
            return f"≥ {version_text(self.since)}"
        if self.until:
            return f"< {version_text(self.until)}"
        return "any"


def between(since: str | None = None, until: str | None = None) -> VersionRange:
    """A range from version strings, for readable data tables."""
    return VersionRange(parse_version(since), parse_version(until))


@dataclass(frozen=True)
class EngineVersion:
    engine: str
    text: str
    version: Version

    def __str__(self) -> str:
        return f"{ENGINE_LABELS[self.engine]} {self.text}"


def parse_engine(spec: str, engine: str | None = None) -> EngineVersion:
    """`vllm==0.24.0`, `vllm 0.24.0`, `sglang=0.5.9`, or a bare `0.24.0` with `engine` given."""
    text = spec.strip()
    m = _SPEC.match(text)
    if m and m.group(1).lower() in ENGINES:
        name, ver = m.group(1).lower(), m.group(2)
    elif engine is not None and parse_version(text) is not None:
        name, ver = engine, text
    else:
        raise BadInput(
            f"cannot read engine version {spec!r}; write it as vllm==0.24.0 or sglang==0.5.9"
        )
    if engine is not None and engine != name:
        raise BadInput(f"engine version {spec!r} is {name}, not {engine}")
    parsed = parse_version(ver)
    if parsed is None:
        raise BadInput(f"cannot read the version in {spec!r}; write it as {name}==0.24.0")
    return EngineVersion(name, ver.lstrip("v"), parsed)
