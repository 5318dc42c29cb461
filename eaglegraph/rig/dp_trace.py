"""What a DP rank's step program yields and records, shared by the engines' programs.

A program is a generator: it yields `(tag, row)` for each DP agreement collective the engine
would issue (the row as the engine builds it), receives every rank's row back, and records
its local dispatch of each forward in a `Trace`. `rig.dp_agreement` drives it over an exchange.
"""

from __future__ import annotations

import bisect
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field

from eaglegraph.results.dp import EAGER, PhaseChoice

# Every collective a program can issue; the wire code is the index + 1 (0 ends a rank's step).
TAGS = ("target", "draft_prefill", "draft_decode", "draft_forward", "mlp_sync")
END = 0

Rows = list[list[int]]
Program = Generator[tuple[str, list[int]], Rows, None]

# vLLM CUDAGraphMode runtime values (vllm/config/compilation.py): NONE, PIECEWISE, FULL.
NONE, PIECEWISE, FULL = 0, 1, 2
MODE_NAMES = {NONE: EAGER, PIECEWISE: "PIECEWISE", FULL: "FULL"}


def pad_up(n: int, sizes: Sequence[int]) -> int | None:
    """The smallest size >= n (a graph bucket), or None past the largest."""
    i = bisect.bisect_left(sizes, n)
    return sizes[i] if i < len(sizes) else None


@dataclass
class Trace:
    """The forwards one rank runs in a step, in order, and how many draft steps it takes."""

    phases: list[PhaseChoice] = field(default_factory=list)
    draft_steps: int = 0

    def graph(
        self,
        phase: str,
        mode: int,
        tokens: int,
        padded: int,
        size: int | None = None,
        index: int = 0,
    ) -> None:
        """A vLLM forward of `tokens` run at `padded`: eager (mode NONE) or the graph of `size`
        tokens (the padded count unless the rank dispatched another descriptor)."""
        if mode == NONE:
            self.phases.append(PhaseChoice(phase, EAGER, tokens, padded, index=index))
        else:
            key = padded if size is None else size
            self.phases.append(
                PhaseChoice(phase, MODE_NAMES[mode], tokens, padded, key, index=index)
            )

    def add(self, choice: PhaseChoice) -> None:
        self.phases.append(choice)
