"""CUDA-graph modes with vLLM's semantics, plus BREAKABLE.

Mirrors vLLM's `CUDAGraphMode`: tuple modes name (decode routine, mixed routine) modes;
`decode_mode()`, `mixed_mode()` and `separate_routine()` drive which descriptors a manager
builds. BREAKABLE is PIECEWISE without torch.compile: one capture broken at attention into
segments (SGLang BCG, vLLM breakable graphs); for descriptors it behaves like PIECEWISE.
"""

from __future__ import annotations

from enum import Enum

from eaglegraph.errors import unknown_choice


class Mode(Enum):
    NONE = 0
    PIECEWISE = 1
    FULL = 2
    BREAKABLE = 3
    FULL_DECODE_ONLY = (2, 0)
    FULL_AND_PIECEWISE = (2, 1)

    @classmethod
    def parse(cls, text: str) -> Mode:
        key = text.strip().upper().replace("-", "_")
        key = key.removeprefix("CUDAGRAPHMODE.")
        if key in cls.__members__:
            return cls[key]
        raise unknown_choice("cudagraph mode", text, cls.__members__)

    def separate_routine(self) -> bool:
        return isinstance(self.value, tuple)

    def decode_mode(self) -> Mode:
        return Mode(self.value[0]) if isinstance(self.value, tuple) else self

    def mixed_mode(self) -> Mode:
        return Mode(self.value[1]) if isinstance(self.value, tuple) else self

    def has_mode(self, mode: Mode) -> bool:
        if isinstance(mode.value, tuple):
            raise ValueError("has_mode takes a runtime mode")
        if isinstance(self.value, tuple):
            return mode.value in self.value
        return self is mode

    def has_piecewise(self) -> bool:
        """`has_piecewise_cudagraphs()`: the mode captures PIECEWISE graphs for some batches."""
        return self is Mode.PIECEWISE or (
            self.separate_routine() and Mode.PIECEWISE.value in self.value
        )

    def has_full(self) -> bool:
        return self is Mode.FULL or (self.separate_routine() and Mode.FULL.value in self.value)

    def without_piecewise(self) -> Mode:
        """What vLLM falls back to when piecewise capture is unavailable."""
        if self is Mode.PIECEWISE:
            return Mode.NONE
        if self is Mode.FULL_AND_PIECEWISE:
            return Mode.FULL_DECODE_ONLY
        return self

    def is_segmented(self) -> bool:
        """Runtime modes whose graphs are split at attention (attention eager between)."""
        return self in (Mode.PIECEWISE, Mode.BREAKABLE)

    def __bool__(self) -> bool:
        return self is not Mode.NONE

    def __str__(self) -> str:
        return self.name


RUNTIME_MODES = (Mode.NONE, Mode.PIECEWISE, Mode.FULL, Mode.BREAKABLE)
