"""Fuzzing the config and header readers: any input gives a result or a BadInput, never a crash."""

from __future__ import annotations

import json
import struct
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eaglegraph.errors import BadInput
from eaglegraph.pair import load_pair
from eaglegraph.pair.config import Config
from eaglegraph.pair.geometry import geometry_from_config
from eaglegraph.pair.kinds import detect_draft_kind
from eaglegraph.pair.presets import PRESETS

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
KEYS = sorted(set(PRESETS["tiny-qwen3-eagle3"].draft) | set(PRESETS["tiny-llama-eagle1"].target) | {
    "speculators_model_type", "transformer_layer_config", "rope_parameters", "eagle_config",
    "num_nextn_predict_layers", "text_config", "truncated_vocab_size", "target_hidden_size",
    "speculators_config", "dflash_config",
})  # fmt: skip


@st.composite
def mutated_configs(draw: Any) -> dict[str, Any]:
    base = dict(
        draw(
            st.sampled_from(
                [p.target for p in PRESETS.values()]
                + [p.draft for p in PRESETS.values() if p.draft is not None]
            )
        )
    )
    for key in draw(st.lists(st.sampled_from(KEYS), max_size=5)):
        if draw(st.booleans()):
            base.pop(key, None)
        else:
            base[key] = draw(json_values)
    return base


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_configs())
def test_config_readers_never_crash(cfg: dict[str, Any]) -> None:
    config = Config(cfg, "config.json")
    try:
        g = geometry_from_config(config)
        assert g.hidden_size > 0 and g.head_dim > 0
    except BadInput:
        pass
    try:
        detect_draft_kind(config, None)
    except BadInput:
        pass


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_configs())
def test_load_pair_never_crashes(cfg: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "config.json").write_text(json.dumps(cfg))
        try:
            load_pair(folder)
        except BadInput:
            pass


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=200), st.booleans())
def test_header_reader_never_crashes(blob: bytes, with_length: bool) -> None:
    payload = struct.pack("<Q", len(blob)) + blob if with_length else blob
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "config.json").write_text(json.dumps(PRESETS["tiny-llama-eagle1"].target))
        (folder / "model.safetensors").write_bytes(payload)
        try:
            load_pair(folder)
        except BadInput:
            pass


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(max_size=6), json_values, max_size=6))
def test_header_json_shapes_never_crash(header: dict[str, Any]) -> None:
    raw = json.dumps(header).encode()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "config.json").write_text(json.dumps(PRESETS["tiny-llama-eagle1"].target))
        (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw)
        try:
            load_pair(folder)
        except BadInput:
            pass


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=120))
def test_config_text_never_crashes(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "config.json").write_text(text)
        try:
            load_pair(folder)
        except BadInput:
            pass
