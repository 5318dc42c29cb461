"""The draft's KV-cache layers as its engine allocates them, from config and headers alone.

`inspect` sizes the KV cache without building a model, so the rule lives here, torch-free:
a kind whose spec says `kv_layer_per_module` (MTP) gets one KV layer per module the engine runs
— not per layer its config declares (for in-checkpoint MTP that config is the target's) — and
every other kind one per decoder layer of its own config. A layer caches a latent row for MLA
configs and k/v heads otherwise.
"""

from __future__ import annotations

from eaglegraph.known import mtp as known_mtp
from eaglegraph.pair.kinds import kind_spec
from eaglegraph.pair.mla import mla_dims
from eaglegraph.pair.model import Pair
from eaglegraph.pair.mtp_layout import MTPLayout, in_target_mtp, separate_mtp_draft


def mtp_layout(pair: Pair) -> MTPLayout | None:
    """Where the pair's MTP modules live: in the target's folder or the draft's own."""
    assert pair.draft is not None
    cfg, index = pair.draft.config, pair.draft.checkpoint
    if pair.target is not None and pair.draft.path == pair.target.path:
        return in_target_mtp(cfg, index)
    return separate_mtp_draft(cfg, set(index.tensors))


def declared_modules(pair: Pair) -> int:
    """The MTP modules the checkpoint declares (1 when it does not say)."""
    assert pair.draft is not None
    layout = mtp_layout(pair)
    return (layout.modules if layout else None) or 1


def modules_run(pair: Pair, framework: str) -> int:
    """The MTP modules the engine runs (SGLang's NextN path: the first one only)."""
    declared = declared_modules(pair)
    archs = pair.target.config.raw("architectures") if pair.target is not None else None
    return known_mtp.modules_run(framework, declared, list(archs or []))


def draft_kv_layers(pair: Pair, framework: str) -> list[tuple[int, int]]:
    """(kv heads, head width) of each KV-cache layer the draft appends after the target's."""
    assert pair.draft is not None and pair.draft_facts is not None
    per_module = kind_spec(pair.draft_facts.kind).kv_layer_per_module
    g = pair.draft.geometry
    count = modules_run(pair, framework) if per_module else g.num_hidden_layers
    mla = mla_dims(pair.draft.config)
    if mla is not None:
        return [(1, mla.cache_width)] * count
    return [(g.num_key_value_heads, g.head_dim)] * count


def draft_layer_count(pair: Pair, framework: str) -> int:
    """Attention layers of the draft, as its kind's build counts them under `framework` (MTP:
    one per module the engine runs, whatever the config's `num_hidden_layers` says); the
    config's layers for other kinds."""
    assert pair.draft is not None and pair.draft_facts is not None
    if pair.draft_facts.kind.supported:
        return len(draft_kv_layers(pair, framework))
    return pair.draft.geometry.num_hidden_layers
