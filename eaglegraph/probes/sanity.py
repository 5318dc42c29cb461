"""Values that are legal but probably not what the user meant: each gets a warning that names
the value and why it matters.

Invalid input is refused where it is parsed (BadInput); this module looks at the resolved
plan and the pair together, where a contradiction only shows: a token budget below the
batch the plan captures, capture sizes the budget silently drops, more requests than tokens,
a K no engine runs, configs whose numbers are finite but absurd. Nothing here changes a run.
"""

from __future__ import annotations

from eaglegraph.errors import BadInput
from eaglegraph.known.startup_limits import startup_refusals
from eaglegraph.pair.geometry import Geometry
from eaglegraph.pair.model import Pair
from eaglegraph.rig.options import PlanOptions
from eaglegraph.rig.plan import build_plan

LARGEST_SANE_K = 10  # engines run K of 1–7; acceptance past ~8 positions is near zero
MANY_GRAPHS = 1000  # a plan this large takes a long time to capture even on a GPU
MANY_SEQS = 4096
MANY_TOKENS = 1 << 18


def plan_warnings(pair: Pair, options: PlanOptions, max_model_len: int | None = None) -> list[str]:
    """Warnings for the plan of `options` on `pair` (empty when nothing looks wrong)."""
    out: list[str] = []
    k, seqs, tokens = (
        options.num_speculative_tokens,
        options.max_num_seqs,
        options.max_num_batched_tokens,
    )
    uniform = seqs * (k + 1)
    if tokens < uniform:
        out.append(
            f"--max-num-batched-tokens {tokens} is below --max-num-seqs × (K+1) = {seqs} × "
            f"{k + 1} = {uniform}: a verify step of every running request does not fit one "
            "batch, so the largest decode batches are never captured"
        )
    out += startup_refusals(options.framework, options)  # `capture`/`probe` refuse these
    if options.capture_sizes is not None:
        dropped = sorted(s for s in options.capture_sizes if s > tokens)
        if dropped:
            out.append(
                f"capture sizes {', '.join(map(str, dropped))} exceed --max-num-batched-tokens "
                f"{tokens} and are dropped, as the engine drops them"
            )
    if seqs > MANY_SEQS:
        out.append(
            f"--max-num-seqs {seqs} is far above what engines run (engine defaults are 48–1024)"
        )
    if tokens > MANY_TOKENS:
        out.append(
            f"--max-num-batched-tokens {tokens} is far above what engines run (8192–65536): "
            "persistent buffers are sized by it"
        )
    if k > LARGEST_SANE_K:
        layers = pair.draft.geometry.num_hidden_layers if pair.draft else None
        of = f" for a draft of {layers} layer{'s' if layers != 1 else ''}" if layers else ""
        out.append(
            f"K={k}{of}: engines run 1–7 speculative tokens; every extra one adds draft "
            "decode steps whose tokens are almost never accepted"
        )
    if max_model_len is not None and k + 1 > max_model_len:
        out.append(f"K+1 = {k + 1} exceeds --max-model-len {max_model_len}")
    try:
        graphs = sum(p.descriptor_count for p in build_plan(options).phases)
    except BadInput:  # an unbuildable plan is refused where it is built
        graphs = 0
    if graphs > MANY_GRAPHS:
        out.append(f"the plan captures {graphs} graphs: capture takes long even on a GPU")
    for side, name in ((pair.target, "target"), (pair.draft, "draft")):
        if side is not None:
            out += [f"{name} config: {w}" for w in geometry_warnings(side.geometry)]
    return out


def geometry_warnings(g: Geometry) -> list[str]:
    """Config numbers that parse but make no sense for a served model."""
    out: list[str] = []
    rope = g.rope
    if rope.rope_theta < 1 or rope.rope_theta > 1e9:
        out.append(
            f"rope_theta {rope.rope_theta:g} is outside 1–1e9 (models use 1e4–1e7): "
            "positions would rotate almost not at all, or wrap within a few tokens"
        )
    if rope.factor is not None and rope.factor > 1024:
        out.append(f"rope scaling factor {rope.factor:g} is far above any released model's (≤ 64)")
    for label, value in (
        ("low_freq_factor", rope.low_freq_factor),
        ("high_freq_factor", rope.high_freq_factor),
    ):
        if value is not None and value <= 0:
            out.append(f"rope {label} {value:g} is not positive: llama3 scaling divides by it")
    if not 0 < g.rms_norm_eps < 0.1:
        out.append(
            f"rms_norm_eps {g.rms_norm_eps:g} is outside (0, 0.1): normalisation would divide by "
            "~0 or flatten every hidden state"
        )
    if g.max_position_embeddings > 1 << 24:
        out.append(f"max_position_embeddings {g.max_position_embeddings} is beyond any model's")
    if g.vocab_size > 1 << 21:
        out.append(f"vocab_size {g.vocab_size} is beyond any tokenizer's (≤ ~260k)")
    return out
