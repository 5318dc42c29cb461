"""What `scaffold` wrote (eaglegraph.scaffold/1) and the presets it can write
(eaglegraph.presets/1): small records, so every command's `--json` can be re-rendered."""

from __future__ import annotations

from dataclasses import dataclass

SCAFFOLD_SCHEMA = "eaglegraph.scaffold/1"
PRESETS_SCHEMA = "eaglegraph.presets/1"


@dataclass
class ScaffoldResult:
    path: str
    preset: str
    description: str
    files: list[str]


@dataclass
class PresetInfo:
    name: str
    kind: str
    weights: str
    description: str


@dataclass
class PresetList:
    presets: list[PresetInfo]
