"""Find the target and the draft in whatever layout a support ticket arrives with.

Layouts: `target/` + `draft/` subfolders; a folder of two model folders with any names; a
draft folder whose speculators config names its verifier; a target with MTP layers; a single
draft or target alone; or explicit `--target/--draft`. Classification of a single model folder
happens in the loader, which has read its config.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from eaglegraph.errors import BadInput

CONFIG = "config.json"


@dataclass
class Located:
    layout: str
    target: Path | None = None
    draft: Path | None = None
    single: Path | None = None
    candidates: list[Path] = field(default_factory=list)


def _model_dir(path: Path, what: str) -> Path:
    if not path.exists():
        raise BadInput(f"{what} {path} does not exist")
    if path.is_file():
        if path.name == CONFIG:
            return path.parent
        raise BadInput(f"{what} {path} is a file; expected a model directory")
    if not (path / CONFIG).exists():
        raise BadInput(f"{what} {path} has no config.json")
    return path


def locate(path: Path | None, target: Path | None = None, draft: Path | None = None) -> Located:
    if target is not None or draft is not None:
        return Located(
            layout="--target/--draft",
            target=_model_dir(target, "--target") if target is not None else None,
            draft=_model_dir(draft, "--draft") if draft is not None else None,
        )
    if path is None:
        raise BadInput("give a MODEL_DIR (or a preset name), or --target/--draft")
    if not path.exists():
        raise BadInput(f"{path} does not exist")
    if path.is_file():
        if path.name == CONFIG:
            return Located(layout="single folder", single=path.parent)
        raise BadInput(f"{path} is a file; expected a model directory")
    t, d = path / "target", path / "draft"
    if (t / CONFIG).exists() and (d / CONFIG).exists():
        return Located(layout="target/ + draft/", target=t, draft=d)
    if (path / CONFIG).exists():
        return Located(layout="single folder", single=path)
    for sub, role in ((t, "target"), (d, "draft")):
        if (sub / CONFIG).exists():
            return Located(
                layout=f"{role}/ only",
                target=sub if role == "target" else None,
                draft=sub if role == "draft" else None,
            )
    try:
        subdirs = sorted(p for p in path.iterdir() if p.is_dir() and (p / CONFIG).exists())
    except PermissionError:
        raise BadInput(f"cannot list {path}: permission denied") from None
    if not subdirs:
        if not any(path.iterdir()):
            raise BadInput(
                f"{path} is empty; expected config.json, or target/ and draft/ subfolders"
            )
        raise BadInput(
            f"no config.json in {path} or its subfolders; expected a model folder, or "
            "target/ and draft/ subfolders"
        )
    return Located(layout="model subfolders", candidates=subdirs)


def resolve_verifier(name: str, draft_dir: Path) -> Path | None:
    """A local folder for a speculators `verifier.name_or_path`, if one exists nearby."""
    raw = Path(name).expanduser()
    candidates = [raw] if raw.is_absolute() else []
    tail = Path(name).name
    for base in (draft_dir, draft_dir.parent):
        candidates += [base / name, base / tail]
    for candidate in candidates:
        try:
            if (candidate / CONFIG).is_file() and candidate.resolve() != draft_dir.resolve():
                return candidate
        except OSError:
            continue
    return None
