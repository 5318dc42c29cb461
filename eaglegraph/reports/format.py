"""Small formatting helpers shared by the renderers (no computation on results)."""

from __future__ import annotations

from collections.abc import Sequence

SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def fmt_bytes(n: int | float | None, na: str = "—") -> str:
    if n is None:
        return na
    value = float(n)
    sign = "-" if value < 0 else ""
    value = abs(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{sign}{value:.0f} {unit}" if unit == "B" else f"{sign}{value:.2f} {unit}"
        value /= 1024
    return f"{sign}{value:.2f} TiB"


def fmt_count(n: int | None) -> str:
    if n is None:
        return "—"
    for unit, div in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= div:
            return f"{n / div:.2f}{unit}"
    return str(n)


def fmt_sizes(sizes: Sequence[int], limit: int = 12) -> str:
    """Compress a size list into arithmetic runs: '4, 8, 16–248 step 8, 256–512 step 16'."""
    if not sizes:
        return "none"
    parts: list[str] = []
    i = 0
    s = list(sizes)
    while i < len(s):
        j = i
        if i + 2 < len(s):
            step = s[i + 1] - s[i]
            while j + 1 < len(s) and s[j + 1] - s[j] == step:
                j += 1
            if j - i >= 2:
                parts.append(f"{s[i]}–{s[j]} step {step}")
                i = j + 1
                continue
        parts.append(str(s[i]))
        i += 1
    text = ", ".join(parts)
    return text if len(parts) <= limit else ", ".join(parts[:limit]) + ", …"
