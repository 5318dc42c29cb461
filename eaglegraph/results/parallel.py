"""A deployment's parallel layout, as every run file and plan records it.

The engines spell it differently (vLLM `--tensor-parallel-size`, `--data-parallel-size`,
`--enable-expert-parallel`; SGLang `--tp-size`, `--dp-size`, `--ep-size`,
`--enable-dp-attention`); `cli/parallel_options.py` parses those spellings into this one value,
so nothing below `cli/` ever reads a flag name. What a layout means per engine (how many GPU
processes, which group each collective runs on) is asked of the layout, never recomputed.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ParallelLayout:
    """Tensor, data and expert parallel sizes of one deployment.

    `tp` and `dp` are the engine's own sizes. `ep` is the expert-parallel group size the MoE
    layers see (1: experts sharded by tensor parallelism, as both engines do by default).
    `dp_attention` is SGLang's DP attention: the `dp` attention replicas live *inside* the TP
    group (world = tp), where vLLM's and SGLang's plain DP add replicas (world = tp × dp).
    """

    tp: int = 1
    dp: int = 1
    ep: int = 1
    dp_attention: bool = False
    # vLLM's `draft_tensor_parallel_size` (speculative config): 1 or tp; None = tp
    draft_tp: int | None = None

    def __post_init__(self) -> None:
        for name in ("tp", "dp", "ep"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, not {value!r}")
        if self.draft_tp is not None and (not isinstance(self.draft_tp, int) or self.draft_tp < 1):
            raise ValueError(f"draft_tp must be a positive integer, not {self.draft_tp!r}")

    @property
    def world_size(self) -> int:
        """GPU processes the layout runs: tp × dp, or tp under DP attention."""
        return self.tp if self.dp_attention else self.tp * self.dp

    @property
    def attention_tp(self) -> int:
        """Ranks one attention layer is sharded over: tp, or tp / dp under DP attention."""
        return self.tp // self.dp if self.dp_attention else self.tp

    @property
    def single(self) -> bool:
        return self.world_size == 1

    @property
    def draft_tensor_parallel(self) -> int:
        """Ranks the draft's layers are split over: `draft_tp`, else the target's `tp`."""
        return self.draft_tp if self.draft_tp is not None else self.tp

    def scaled(self, tp: int) -> ParallelLayout:
        """The same shape at another TP size: an EP group that spanned every rank (vLLM's
        tp × dp, SGLang's `--ep-size` = tp) still does, a replicated draft stays replicated;
        a partial EP group keeps its size. What "needs TP ≥ M" is searched over."""
        ep = self.ep
        if self.ep > 1 and self.ep == self.tp * (1 if self.dp_attention else self.dp):
            ep = tp * (1 if self.dp_attention else self.dp)
        elif self.ep > 1 and self.ep == self.tp:
            ep = tp
        draft_tp = 1 if self.draft_tp == 1 else None
        return ParallelLayout(tp, self.dp, ep, self.dp_attention, draft_tp)

    def tp_rank(self, rank: int) -> int:
        """The rank's index inside its tensor-parallel group (global ranks are dp-major)."""
        return rank % self.tp

    def dp_rank(self, rank: int) -> int:
        """The rank's data-parallel replica (under DP attention: its attention replica)."""
        if self.dp_attention:
            return rank // self.attention_tp
        return rank // self.tp

    def describe(self) -> str:
        """`TP 4 · DP 2 · EP 8 · DP attention`, the parts that are not 1."""
        parts = [f"TP {self.tp}"]
        if self.dp > 1:
            parts.append(f"DP {self.dp}")
        if self.ep > 1:
            parts.append(f"EP {self.ep}")
        if self.dp_attention:
            parts.append("DP attention")
        if self.draft_tp is not None and self.draft_tp != self.tp:
            parts.append(f"draft TP {self.draft_tp}")
        return " · ".join(parts)


SINGLE_RANK = ParallelLayout()
