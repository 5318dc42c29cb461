"""Find the target and the draft in whatever layout a support ticket arrives with.

Layouts (the README lists the same, each has a test in tests/pair/test_discovery*.py):
- `target/` + `draft/` subfolders;
- a target at the folder's root with its draft in a subfolder of any name (`draft/`, `eagle/`,
  `mtp/`, …): whichever subfolder holds a draft config;
- a folder of two model folders with any names;
- a draft folder whose config names its verifier, found next to it (or in the same Hugging
  Face cache);
- a target with MTP layers in its own checkpoint; a single draft or target alone;
- Hugging Face cache folders (`models--org--name`, resolved to `snapshots/<rev>` through
  `refs/main`), given directly or as the subfolders above; symlinks into `blobs/` are followed;
- explicit `--target/--draft`.
A symlink loop or an unreadable subfolder is skipped with a warning that names it, never
followed. Classification of a model folder happens in the loader, which has read its config.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field
from pathlib import Path

from eaglegraph.errors import BadInput

CONFIG = "config.json"
HF_CACHE_PREFIX = "models--"


@dataclass
class Located:
    layout: str
    target: Path | None = None
    draft: Path | None = None
    single: Path | None = None
    candidates: list[Path] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # what was skipped, and why


def _problem(path: Path) -> str | None:
    """Why `path` cannot be looked into (a symlink loop, no permission), or None."""
    try:
        path.resolve(strict=True)
        os.stat(path)
    except RuntimeError:  # pathlib's own loop detection
        return "a symlink loop"
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # newer Pythons raise this from resolve() too
            return "a symlink loop"
        if isinstance(exc, PermissionError):
            return "permission denied"
        if isinstance(exc, FileNotFoundError):
            return "a broken symlink" if path.is_symlink() else None
        return exc.strerror or str(exc)
    return None


def _missing(path: Path) -> str:
    problem = _problem(path)
    return f"{path} is {problem}" if problem else f"{path} does not exist"


def hf_snapshot(path: Path) -> tuple[Path, str | None]:
    """The snapshot folder of a Hugging Face cache folder (`models--org--name`): the revision
    `refs/main` names, else the only (or newest) snapshot; other paths are returned as given.
    The second value says which snapshot was chosen when there was a choice."""
    snapshots = path / "snapshots"
    if not path.name.startswith(HF_CACHE_PREFIX) or not snapshots.is_dir():
        return path, None
    ref = path / "refs" / "main"
    try:
        rev = ref.read_text(encoding="utf-8").strip() if ref.is_file() else ""
    except OSError:
        rev = ""
    if rev and (snapshots / rev).is_dir():
        return snapshots / rev, None
    # no usable ref: the newest snapshot, those holding a readable config.json first
    revs = sorted(
        (p for p in snapshots.iterdir() if p.is_dir()),
        key=lambda p: ((p / CONFIG).exists(), p.stat().st_mtime),
    )
    if not revs:
        raise BadInput(f"{path} is a Hugging Face cache folder with no snapshot")
    chosen = revs[-1]
    note = None
    if len(revs) > 1:
        note = (
            f"{path.name}: {len(revs)} snapshots and no refs/main; used the newest, {chosen.name}"
        )
    return chosen, note


def hf_cache_name(path: Path) -> str | None:
    """'org/name' for a folder inside a Hugging Face cache (`models--org--name/snapshots/x`)."""
    for part in reversed(path.parts):
        if part.startswith(HF_CACHE_PREFIX):
            return part[len(HF_CACHE_PREFIX) :].replace("--", "/", 1)
    return None


def _model_dir(path: Path, what: str) -> Path:
    if not path.exists():
        raise BadInput(f"{what} {_missing(path)}")
    if path.is_file():
        if path.name == CONFIG:
            return path.parent
        raise BadInput(f"{what} {path} is a file; expected a model directory")
    path, _ = hf_snapshot(path)
    _require_config(path, what)
    return path


def _require_config(folder: Path, what: str = "") -> None:
    config = folder / CONFIG
    if not config.exists():
        where = f"{what} {folder}".strip()
        if config.is_symlink():
            raise BadInput(f"{where}: its config.json is {_problem(config)}")
        raise BadInput(f"{where} has no config.json")


def _model_subfolders(path: Path, warnings: list[str]) -> list[Path]:
    """Subfolders holding a config.json (cache folders resolved to their snapshot); loops and
    unreadable entries are skipped with a warning."""
    try:
        entries = sorted(path.iterdir())
    except PermissionError:
        raise BadInput(f"cannot list {path}: permission denied") from None
    found = []
    for entry in entries:
        problem = _problem(entry)
        if problem is not None:
            warnings.append(f"skipped {entry}: {problem}")
            continue
        try:
            if not entry.is_dir():
                continue
            try:
                folder, note = hf_snapshot(entry)
            except BadInput as exc:
                warnings.append(f"skipped {entry}: {exc}")
                continue
            config = folder / CONFIG
            if config.exists():
                found.append(folder)
                if note:
                    warnings.append(note)
            elif config.is_symlink():  # a loop, or a blob a partial download never wrote
                warnings.append(f"skipped {entry}: its config.json is {_problem(config)}")
        except PermissionError:
            warnings.append(f"skipped {entry}: permission denied")
    return found


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
        raise BadInput(_missing(path))
    if path.is_file():
        if path.name == CONFIG:
            return Located(layout="single folder", single=path.parent)
        raise BadInput(f"{path} is a file; expected a model directory")
    warnings: list[str] = []
    path, note = hf_snapshot(path)
    warnings += [note] if note else []
    layout_of = "Hugging Face cache, " if path.parent.name == "snapshots" else ""
    if (path / CONFIG).is_symlink():
        _require_config(path)  # a loop, or a blob never downloaded: said, not searched past
    t, d = path / "target", path / "draft"
    if (t / CONFIG).exists() and (d / CONFIG).exists():
        return Located(layout=f"{layout_of}target/ + draft/", target=t, draft=d, warnings=warnings)
    if (path / CONFIG).exists():
        # a model at the root; a draft may sit in one of its subfolders (the loader decides)
        return Located(
            layout=f"{layout_of}single folder",
            single=path,
            candidates=_model_subfolders(path, warnings),
            warnings=warnings,
        )
    subdirs = _model_subfolders(path, warnings)
    for sub, role in ((t, "target"), (d, "draft")):
        if (sub / CONFIG).exists() and subdirs == [sub]:
            return Located(
                layout=f"{role}/ only",
                target=sub if role == "target" else None,
                draft=sub if role == "draft" else None,
                warnings=warnings,
            )
    if not subdirs:
        if not any(path.iterdir()):
            raise BadInput(
                f"{path} is empty; expected config.json, or target/ and draft/ subfolders"
            )
        skipped = f" ({'; '.join(warnings)})" if warnings else ""
        raise BadInput(
            f"no config.json in {path} or its subfolders; expected a model folder, or "
            f"target/ and draft/ subfolders{skipped}"
        )
    return Located(layout="model subfolders", candidates=subdirs, warnings=warnings)


def resolve_verifier(name: str, draft_dir: Path) -> Path | None:
    """A local folder for the verifier a draft config names, if one exists nearby: next to the
    draft, or in the Hugging Face cache the draft itself sits in."""
    raw = Path(name).expanduser()
    candidates = [raw] if raw.is_absolute() else []
    tail = Path(name).name
    for base in (draft_dir, draft_dir.parent):
        candidates += [base / name, base / tail]
    if hf_cache_name(draft_dir) is not None and "/" in name:
        hub = next(p for p in draft_dir.parents if p.name.startswith(HF_CACHE_PREFIX)).parent
        candidates.append(hub / (HF_CACHE_PREFIX + name.replace("/", "--")))
    for candidate in candidates:
        try:
            folder, _ = hf_snapshot(candidate) if candidate.is_dir() else (candidate, None)
            if (folder / CONFIG).is_file() and folder.resolve() != draft_dir.resolve():
                return folder
        except (OSError, BadInput):
            continue
    return None
