"""The behaviors `probe --list-behaviors` explains (eaglegraph.behaviors/1): each profile of
engine semantics, the releases it stands for, and its flags with the PR behind each."""

from __future__ import annotations

from dataclasses import dataclass

from eaglegraph.known.profiles import PROFILES

BEHAVIORS_SCHEMA = "eaglegraph.behaviors/1"


@dataclass
class BehaviorFlag:
    on: bool
    ref: str


@dataclass
class Behavior:
    name: str
    framework: str
    summary: str
    versions: str
    flags: dict[str, BehaviorFlag]
    default_pool: str


@dataclass
class BehaviorList:
    behaviors: list[Behavior]

    @classmethod
    def known(cls) -> BehaviorList:
        """Every profile in the knowledge package, as listed data."""
        return cls(
            [
                Behavior(
                    name=b.name,
                    framework=b.engine,
                    summary=b.summary,
                    versions=b.versions.describe(),
                    flags={
                        name: BehaviorFlag(on, ref) for name, (on, ref) in b.flag_refs().items()
                    },
                    default_pool=b.default_pool,
                )
                for b in PROFILES.values()
            ]
        )
