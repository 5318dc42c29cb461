"""Default attention backends per (engine, release, SM, architecture), each row citing the
engine function it was read from; engine spellings and MLA backends on the command line."""

from __future__ import annotations

import pytest

from eaglegraph.errors import BadInput
from eaglegraph.known.backends import engine_backend, vllm_default_backend
from eaglegraph.known.sglang_backends import sglang_default_backend
from eaglegraph.known.versions import parse_version

pytestmark = pytest.mark.fast

SGL_15 = "sglang 0.5.15 srt/server_args.py::ServerArgs._get_default_attn_backend"
SGL_23 = "sglang 0.5.23 srt/arg_groups/model_override_base.py::get_default_attn_backend"
DSV2 = "sglang 0.5.23 srt/arg_groups/model_overrides/deepseek_v2.py (DeepSeek V3/R1 on sm100)"

# (release, SM major, architecture, mla, algorithm, topk) -> (backend, rig family, source)
SGLANG_TABLE = [
    ("0.5.23", 9, "LlamaForCausalLM", False, "EAGLE3", 1, "fa3", "flash_attn", SGL_23),
    ("0.5.23", 9, "LlamaForCausalLM", False, "EAGLE3", 4, "flashinfer", "flashinfer", SGL_23),
    ("0.5.23", 10, "LlamaForCausalLM", False, "EAGLE3", 1, "trtllm_mha", None, SGL_23),
    ("0.5.23", 10, "LlamaForCausalLM", False, "EAGLE3", None, "flashinfer", "flashinfer", SGL_23),
    ("0.5.23", 10, "Qwen3ForCausalLM", False, "NEXTN", None, "trtllm_mha", None, SGL_23),
    ("0.5.23", 9, "DeepseekV3ForCausalLM", True, "NEXTN", 1, "fa3", "flash_attn", SGL_23),
    ("0.5.23", 10, "DeepseekV3ForCausalLM", True, "NEXTN", 1, "trtllm_mla", None, DSV2),
    ("0.5.23", 10, "DeepseekV2ForCausalLM", True, "NEXTN", 1, "flashinfer", "flashinfer", SGL_23),
    ("0.5.23", 8, "DeepseekV2ForCausalLM", True, "NEXTN", 1, "triton", "triton", SGL_23),
    ("0.5.23", 8, "LlamaForCausalLM", False, "EAGLE", 1, "flashinfer", "flashinfer", SGL_23),
    ("0.5.15", 9, "LlamaForCausalLM", False, "EAGLE3", 1, "fa3", "flash_attn", SGL_15),
    ("0.5.15", 10, "Qwen3ForCausalLM", False, "NEXTN", None, "flashinfer", "flashinfer", SGL_15),
    ("0.5.15", 10, "LlamaForCausalLM", False, "EAGLE3", 1, "trtllm_mha", None, SGL_15),
    ("0.5.15", 9, "DeepseekV3ForCausalLM", True, "NEXTN", 1, "fa3", "flash_attn", SGL_15),
]


@pytest.mark.parametrize(
    ("release", "sm", "arch", "mla", "algorithm", "topk", "name", "family", "source"),
    SGLANG_TABLE,
)
def test_sglang_default_backend(
    release: str,
    sm: int,
    arch: str,
    mla: bool,
    algorithm: str,
    topk: int | None,
    name: str,
    family: str | None,
    source: str,
) -> None:
    version = parse_version(release)
    assert version is not None
    chosen = sglang_default_backend(
        version, sm, mla=mla, architecture=arch, speculative_algorithm=algorithm, eagle_topk=topk
    )
    assert (chosen.engine_name, chosen.rig_backend, chosen.source) == (name, family, source)
    assert chosen.to_json()["attention_backend"] == name


def test_sglang_asymmetric_kv_fa4_only_from_0_5_23() -> None:
    new, old = parse_version("0.5.23"), parse_version("0.5.15")
    assert new is not None and old is not None
    pick = sglang_default_backend(new, 10, mla=False, asymmetric_kv=True)
    assert pick.engine_name == "fa4" and pick.rig_backend is None
    assert sglang_default_backend(old, 10, mla=False, asymmetric_kv=True).engine_name == (
        "trtllm_mha"
    )


PRIORITIES = "vllm/platforms/cuda.py::_get_backend_priorities"

# vLLM 0.33 (SM major, mla) -> default backend; every row from _get_backend_priorities
VLLM_TABLE = [
    (9, False, "FLASH_ATTN"),
    (10, False, "FLASHINFER"),
    (8, False, "FLASH_ATTN"),
    (9, True, "FLASH_ATTN_MLA"),
    (10, True, "FLASHINFER_MLA"),
    (12, True, "TRITON_MLA"),
]


@pytest.mark.parametrize(("sm", "mla", "name"), VLLM_TABLE)
def test_vllm_default_backend(sm: int, mla: bool, name: str) -> None:
    chosen = vllm_default_backend(sm, mla=mla)
    assert chosen.engine_name == name
    if mla:  # named with its builder's graph support, planned as a modelled family
        assert name in chosen.why and "MetadataBuilder" in chosen.why
        assert chosen.rig_backend == "flash_attn"


@pytest.mark.parametrize(
    ("spelling", "family"),
    [
        ("FLASH_ATTN", "flash_attn"),
        ("FlashInfer", "flashinfer"),
        ("TRITON_ATTN", "triton"),
        ("fa3", "flash_attn"),
        ("Triton", "triton"),
    ],
)
def test_engine_spellings_any_case(spelling: str, family: str) -> None:
    assert engine_backend(spelling) == family


@pytest.mark.parametrize("name", ["FLASH_ATTN_MLA", "flashinfer_mla", "CUTLASS_MLA"])
def test_mla_backend_refused_with_support_and_default(name: str) -> None:
    with pytest.raises(BadInput) as err:
        engine_backend(name)
    text = str(err.value)
    assert "MetadataBuilder" in text and "FLASHINFER_MLA" in text and PRIORITIES in text


def test_unknown_backend_gets_closest() -> None:
    with pytest.raises(BadInput) as err:
        engine_backend("flash_atn")
    assert "flash_attn" in str(err.value)
