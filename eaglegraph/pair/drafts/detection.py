"""How a kind recognises a folder: the evidence a rule may read, the rules, and the
architecture names a kind answers to, declared as data.

Each kind module (`pair/drafts/<kind>.py`) lists its rules as `RECOGNISERS`; `recognisers()`
gathers every kind's and orders them, and `pair.kinds.detect_draft_kind` asks them in turn.
A rule over the config's `architectures` is not written as a loop: the kind declares the
names (`ArchName` rows) in an `ArchNames`, which says which name decided.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Protocol

from eaglegraph.pair.config import Config
from eaglegraph.pair.drafts.base import DraftKind
from eaglegraph.pair.tensors import CheckpointIndex

LAYER_RE = re.compile(r"^(?:model\.)?layers\.(\d+)\.")


@dataclass
class KindVerdict:
    kind: DraftKind
    style: str | None
    evidence: list[str] = field(default_factory=list)

    @property
    def is_draft(self) -> bool:
        return self.kind is not DraftKind.UNKNOWN


@dataclass(frozen=True)
class Evidence:
    """What a recogniser may look at: the folder's config and its tensor names (no `model.`)."""

    cfg: Config
    index: CheckpointIndex | None
    names: frozenset[str]

    @property
    def archs(self) -> list[str]:
        return self.cfg.str_list("architectures")

    @property
    def num_layers(self) -> int | None:
        layers = self.cfg.int("num_hidden_layers", default=None, minimum=None)
        return layers if isinstance(layers, int) else None

    @property
    def small(self) -> bool:
        """One or two layers: the shape of an EAGLE head."""
        return self.num_layers is not None and self.num_layers <= 2

    @property
    def first_arch(self) -> str:
        return self.archs[0] if self.archs else "model"

    @property
    def layer_ids(self) -> set[int]:
        """The decoder layer ids the folder's tensor names hold (`layers.{i}.*`)."""
        return {int(m.group(1)) for n in self.names if (m := LAYER_RE.match(n))}


class Recognises(Protocol):
    """One rule by which a kind recognises a folder. Lower `priority` is asked first (config
    keys ~10-30, architecture names ~20-40, config shape ~50, tensor headers ~60-70, weak
    config-only guesses ~80+); the first rule that returns a verdict decides."""

    @property
    def priority(self) -> int: ...

    def verdict(self, ev: Evidence) -> KindVerdict | None: ...


Rule = Callable[[Evidence], KindVerdict | None]


@dataclass(frozen=True)
class Recogniser:
    """A rule written as a function of the evidence (`@recognises(priority)` over it)."""

    priority: int
    rule: Rule

    def verdict(self, ev: Evidence) -> KindVerdict | None:
        return self.rule(ev)


def recognises(priority: int) -> Callable[[Rule], Recogniser]:
    """`@recognises(25)` over a rule function: the rule, asked at that priority; its
    priority stands with it instead of in a list beside the kind's other rules."""

    def wrap(rule: Rule) -> Recogniser:
        return Recogniser(priority, rule)

    return wrap


@dataclass(frozen=True)
class ArchName:
    """One architecture name a kind answers to: the test an entry of the config's
    `architectures` passes (`exact`, `prefix`, `suffix`, `contains`: every one given must hold;
    `any_case` compares lower-cased), the checkpoint style it implies, and `kind` where the
    name means another kind (a DSpark drafter is named beside DFlash's)."""

    exact: str | None = None
    prefix: str | None = None
    suffix: str | None = None
    contains: str | None = None
    style: str | None = None
    any_case: bool = False
    kind: DraftKind | None = None

    def __post_init__(self) -> None:
        if not self._tests():
            raise ValueError("an ArchName needs exact, prefix, suffix or contains")

    def _tests(self) -> list[tuple[str, Callable[[str, str], bool]]]:
        tests: list[tuple[str | None, Callable[[str, str], bool]]] = [
            (self.exact, str.__eq__),
            (self.prefix, str.startswith),
            (self.suffix, str.endswith),
            (self.contains, str.__contains__),
        ]
        return [(text, test) for text, test in tests if text is not None]

    def matches(self, arch: str) -> bool:
        def fold(s: str) -> str:
            return s.lower() if self.any_case else s

        return all(test(fold(arch), fold(text)) for text, test in self._tests())


@dataclass(frozen=True)
class ArchNames:
    """A kind's architecture names as a rule: the first of the config's architectures that
    one of `names` matches (the first such name, in order) decides, and the evidence reads
    "architecture '<name>' <says>"."""

    kind: DraftKind
    priority: int
    says: str
    names: tuple[ArchName, ...]

    def verdict(self, ev: Evidence) -> KindVerdict | None:
        for arch in ev.archs:
            name = next((n for n in self.names if n.matches(arch)), None)
            if name is not None:
                evidence = [f"architecture {arch!r} {self.says}"]
                return KindVerdict(name.kind or self.kind, name.style, evidence)
        return None


@cache
def recognisers() -> tuple[Recognises, ...]:
    """Every kind's `RECOGNISERS` (`pair/drafts/<kind>.py`, looked up by name as its `SPEC`
    is), the lowest priority first."""
    rules: list[Recognises] = []
    for kind in DraftKind:
        module = importlib.import_module(f"eaglegraph.pair.drafts.{kind.value}")
        for rule in module.RECOGNISERS:
            if not isinstance(rule, (Recogniser, ArchNames)):
                raise RuntimeError(f"pair/drafts/{kind.value}.py: {rule!r} is not a recogniser")
            rules.append(rule)
    return tuple(sorted(rules, key=lambda r: r.priority))
