"""`load_pair`: from a path (or --target/--draft) to an inspected `Pair`, headers only."""

from __future__ import annotations

from pathlib import Path

from eaglegraph.errors import BadInput
from eaglegraph.pair.checks import check_pair, layout_finding
from eaglegraph.pair.config import Config
from eaglegraph.pair.discovery import locate, resolve_verifier
from eaglegraph.pair.drafts.base import InTarget, KindSpec
from eaglegraph.pair.facts import DraftFacts, draft_facts
from eaglegraph.pair.geometry import geometry_from_config
from eaglegraph.pair.kinds import KindVerdict, all_specs, detect_draft_kind
from eaglegraph.pair.model import (
    ModelSide,
    Pair,
    estimate_draft_parameters,
    estimate_target_parameters,
    summarize_weights,
)
from eaglegraph.pair.tensors import read_checkpoint


class _Folder:
    """One model folder read once: config, headers, geometry, draft verdict."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.config = Config.read(path / "config.json")
        self.index = read_checkpoint(path)
        self.geometry = geometry_from_config(self.config)
        self.verdict: KindVerdict = detect_draft_kind(self.config, self.index)

    def side(self, role: str, facts: DraftFacts | None = None) -> ModelSide:
        estimate = (
            estimate_draft_parameters(self.geometry, facts, self.config)
            if role == "draft"
            else estimate_target_parameters(self.geometry, self.config)
        )
        return ModelSide(
            role=role,
            path=self.path,
            architecture=self.geometry.architecture,
            geometry=self.geometry,
            weights=summarize_weights(self.index),
            estimated_parameter_count=estimate,
            config=self.config,
            checkpoint=self.index,
        )


# keys besides speculators' `verifier.name_or_path` by which a draft config names its target
VERIFIER_KEYS = ("base_model_name_or_path",)


def _facts(draft: _Folder, target: _Folder | None) -> DraftFacts:
    facts = draft_facts(
        draft.config,
        draft.verdict,
        draft.index,
        draft.geometry.hidden_size,
        draft.geometry.vocab_size,
        target.geometry.hidden_size if target else None,
        target.geometry.num_hidden_layers if target else None,
    )
    for key in VERIFIER_KEYS:
        if facts.verifier is None:
            facts.verifier = draft.config.str(key, default=None)
    return facts


def _assemble(
    root: Path,
    layout: str,
    target: _Folder | None,
    draft: _Folder | None,
    warnings: list[str] | None = None,
) -> Pair:
    if target is not None and target.verdict.kind.supported:
        raise BadInput(
            f"the folder given as target ({target.path}) holds an "
            f"{target.verdict.kind.value} draft ({'; '.join(target.verdict.evidence)})"
        )
    facts = _facts(draft, target) if draft is not None else None
    missing = None
    inner_side = None
    inner_tensors: list[str] = []
    if draft is None and target is not None:
        inner = _draft_in_target(target)
        if inner is not None:
            spec, found = inner
            facts = _inner_facts(target, spec, found)
            inner_side = target.side("draft", facts)
            inner_side.architecture = f"{target.geometry.architecture} ({spec.title} layers)"
            if found.tensors:  # the checkpoint holds both: each side gets its own tensors
                inner_side.weights = summarize_weights(target.index, found.tensors)
                inner_tensors = found.tensors
            layout = f"{layout}, target with {spec.title} layers"
        else:
            missing = f"no draft found: {target.path} was inspected alone as a target"
    if target is None and draft is not None:
        where = (
            f" (its config names verifier {facts.verifier!r}, not found locally)"
            if facts and facts.verifier
            else ""
        )
        missing = f"no target found: {draft.path} was inspected alone as a draft{where}"
    pair = Pair(
        root=root,
        layout=layout,
        target=_target_side(target, inner_tensors) if target else None,
        draft=draft.side("draft", facts) if draft else inner_side,
        draft_facts=facts,
        missing=missing,
    )
    pair.findings = check_pair(pair) + [layout_finding(w) for w in warnings or []]
    return pair


def _target_side(target: _Folder, draft_tensors: list[str]) -> ModelSide:
    """The target side; its weights leave out a draft stored in its own checkpoint."""
    side = target.side("target")
    if draft_tensors:
        side.weights = summarize_weights(target.index, draft_tensors, exclude=True)
    return side


def _draft_in_target(target: _Folder) -> tuple[KindSpec, InTarget] | None:
    """The first kind that finds a draft inside the target's own checkpoint (MTP layers)."""
    for spec in all_specs():
        found = spec.in_target(target.config, target.index)
        if found is not None:
            return spec, found
    return None


def _inner_facts(target: _Folder, spec: KindSpec, found: InTarget) -> DraftFacts:
    facts = draft_facts(
        target.config,
        KindVerdict(spec.kind, None, found.evidence),
        None,
        target.geometry.hidden_size,
        target.geometry.vocab_size,
        target.geometry.hidden_size,
        target.geometry.num_hidden_layers,
    )
    facts.mtp_layers = found.layers
    facts.notes += found.notes
    facts.kind_facts += found.rows
    facts.embed_tokens = facts.lm_head = "shared (the target's)"
    return facts


def load_pair(
    path: Path | str | None = None,
    target: Path | str | None = None,
    draft: Path | str | None = None,
) -> Pair:
    """Inspect a target/draft pair from config.json and safetensors headers only."""
    p = Path(path) if path is not None else None
    located = locate(
        p, Path(target) if target is not None else None, Path(draft) if draft is not None else None
    )
    root = p if p is not None else Path(located.target or located.draft or ".")
    warnings = located.warnings
    cache = located.layout.removesuffix("single folder")  # "Hugging Face cache, " or ""
    if located.target or located.draft:
        t = _Folder(located.target) if located.target else None
        d = _Folder(located.draft) if located.draft else None
        return _assemble(root, located.layout, t, d, warnings)
    if located.single is not None:
        folder = _Folder(located.single)
        if folder.verdict.is_draft:
            verifier = _facts(folder, None).verifier
            if verifier:
                found = resolve_verifier(verifier, folder.path)
                if found is not None:
                    layout = f"{cache}draft naming its verifier"
                    return _assemble(root, layout, _Folder(found), folder, warnings)
            return _assemble(root, f"{cache}draft only", None, folder, warnings)
        inner = _drafts_below(folder, located.candidates, warnings)
        if inner is not None:
            layout = f"{cache}target at the root + draft in {inner.path.name}/"
            return _assemble(root, layout, folder, inner, warnings)
        return _assemble(root, f"{cache}target only", folder, None, warnings)
    folders = [_Folder(c) for c in located.candidates]
    drafts = [f for f in folders if f.verdict.is_draft]
    targets = [f for f in folders if not f.verdict.is_draft]
    if len(drafts) > 1 or len(targets) > 1:
        names = ", ".join(f.path.name for f in folders)
        raise BadInput(
            f"{root} holds several model folders ({names}); pass --target DIR --draft DIR"
        )
    return _assemble(
        root,
        "model subfolders",
        targets[0] if targets else None,
        drafts[0] if drafts else None,
        warnings,
    )


def _drafts_below(target: _Folder, subfolders: list[Path], warnings: list[str]) -> _Folder | None:
    """The one draft in a root model's subfolders (`draft/`, `eagle/`, `mtp/`, any name); a
    subfolder whose config cannot be read is skipped with a warning."""
    drafts = []
    for sub in subfolders:
        try:
            folder = _Folder(sub)
        except BadInput as exc:
            warnings.append(f"skipped {sub}: {exc}")
            continue
        if folder.verdict.is_draft:
            drafts.append(folder)
    if len(drafts) > 1:
        names = ", ".join(f"{f.path.name}/" for f in drafts)
        raise BadInput(
            f"{target.path} holds a target and several drafts ({names}); pass "
            "--target DIR --draft DIR"
        )
    return drafts[0] if drafts else None
