"""What /proc says about a process, for the views that name one (NVML's compute processes,
py-spy's dumped ranks). Linux only; elsewhere, or for a process that is gone, nothing."""

from __future__ import annotations


def command_line(pid: int, limit: int = 4096) -> str | None:
    """The process's arguments joined by spaces (the first `limit` bytes), or None when /proc
    cannot tell (no such process, another container's PID, not Linux)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            raw = fh.read(limit)
    except OSError:
        return None
    return raw.replace(b"\x00", b" ").decode("utf-8", "replace").strip() or None
