"""The console every terminal view prints to: rich's, without trailing spaces.

Rich pads table and grid lines to their full width, so copied reports and logs carry runs of
blanks at the end of every line (and `diff` of two saved views shows noise). This console
drops them as it writes, before and after any colour codes, and leaves everything else alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import IO, Any

from rich.console import Console
from rich.segment import Segment

# blanks (and the style codes between them) that end a line
_TRAILING = re.compile(r"(?:[ \t]|\x1b\[[0-9;]*m)+(?=\n)")
_CODES = re.compile(r"\x1b\[[0-9;]*m")


def _keep_codes(match: re.Match[str]) -> str:
    return "".join(_CODES.findall(match.group(0)))


def strip_trailing(text: str) -> str:
    """`text` with the blanks at the end of each line removed, colour codes kept."""
    return _TRAILING.sub(_keep_codes, text)


class TrimmedConsole(Console):
    """A rich Console whose lines never end in blanks."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return strip_trailing(super()._render_buffer(buffer))


def plain_console(width: int, file: IO[str] | None = None, **kwargs: Any) -> TrimmedConsole:
    """A colourless console of a fixed width (tests, width checks, saved text views)."""
    import io

    return TrimmedConsole(
        file=file if file is not None else io.StringIO(),
        width=width,
        no_color=True,
        color_system=None,
        highlight=False,
        **kwargs,
    )
