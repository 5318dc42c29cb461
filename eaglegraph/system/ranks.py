"""Which rank a process is, from its engine's process title or its launcher's environment.

A hung deployment is one process per GPU rank; `stacks PID PID …` names each by what the engine
itself called it (`VLLM::Worker_DP0_TP1`, `sglang::scheduler_TP3`), so a user reads "TP1 differs"
instead of a PID. The formats are in `known/process_titles.py`.
"""

from __future__ import annotations

from eaglegraph.known.process_titles import AXIS, RANK_AXES, RANK_ENV, TITLE, TITLE_ENGINES
from eaglegraph.results.stacks import RankName


def rank_from_title(command_line: str | None) -> RankName | None:
    """The rank an engine's process title names, or None when the command line has none."""
    if not command_line:
        return None
    for match in TITLE.finditer(command_line):
        engine = TITLE_ENGINES.get(match.group("prefix").lower())
        if engine is None:
            continue
        axes = {a: int(n) for a, n in AXIS.findall(match.group("axes"))}
        ordered = sorted(axes.items(), key=lambda kv: RANK_AXES.index(kv[0]))
        role = match.group("role")
        label = " ".join(f"{a}{n}" for a, n in ordered) or role
        return RankName(label, engine, role, dict(ordered), "title")
    return None


def rank_from_environ(environ: bytes | None) -> RankName | None:
    """`RANK`/`LOCAL_RANK` from a /proc/PID/environ blob (NUL-separated), or None."""
    if not environ:
        return None
    env = dict(
        item.split("=", 1) for item in environ.decode("utf-8", "replace").split("\0") if "=" in item
    )
    for var in RANK_ENV:
        value = env.get(var, "")
        if value.isdigit():
            return RankName(f"{var} {value}", None, None, {}, "env")
    return None


def read_environ(pid: int) -> bytes | None:
    """/proc/PID/environ (readable by the process's owner or root), or None."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return fh.read(1 << 16)
    except OSError:
        return None


def rank_name(pid: int, command_line: str | None, environ: bytes | None = None) -> RankName:
    """The best name for `pid`: its engine title, else its launcher's RANK, else its PID."""
    return (
        rank_from_title(command_line)
        or rank_from_environ(environ if environ is not None else read_environ(pid))
        or RankName(f"pid {pid}")
    )
