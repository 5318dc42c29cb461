"""Attention backends as users copy them from an engine's launch line, and what the rig models.

vLLM spells its backends as `AttentionBackendEnum` members (`--attention-backend FLASH_ATTN`,
`vllm/v1/attention/backends/registry.py`); SGLang as `--attention-backend` choices
(`fa3`, `flashinfer`, `triton`, `trtllm_mha`, ...; `sglang/srt/server_args.py`). The rig models
three metadata and graph-support families: FlashAttention (query_start_loc, seq_lens, block
table), FlashInfer (CSR kv_indptr) and Triton. An MLA backend (`FLASH_ATTN_MLA`,
`FLASHINFER_MLA`, `CUTLASS_MLA`, ...) reports its own graph support, which the rig does not
model: a named one is refused in one line that gives its graph support and the default per
GPU; an unnamed default is planned as flash_attn with its name and support in the plan.
"""

from __future__ import annotations

from dataclasses import dataclass

from eaglegraph.errors import BadInput, unknown_choice
from eaglegraph.known.versions import Version, VersionRange, between

# what the rig models (`rig.options.ATTENTION_BACKENDS`)
RIG_BACKENDS = ("flash_attn", "flashinfer", "triton")

# each accepted spelling (case-insensitive) -> the rig backend it runs as
BACKEND_SPELLINGS: dict[str, str] = {
    # eaglegraph's names; vLLM's FLASH_ATTN and FLASHINFER are the same words
    "flash_attn": "flash_attn",
    "flashinfer": "flashinfer",
    "triton": "triton",
    # vLLM AttentionBackendEnum.TRITON_ATTN (vllm 0.33, v1/attention/backends/registry.py)
    "triton_attn": "triton",
    # SGLang --attention-backend fa3 (sglang 0.5.23, srt/server_args.py)
    "fa3": "flash_attn",
}

# vLLM's MLA backends (registry.py): recognised, not modelled
MLA_BACKENDS = ("flash_attn_mla", "flashinfer_mla", "cutlass_mla", "flashmla", "triton_mla")

# each MLA backend's `_cudagraph_support` on CUDA (vllm 0.33, v1/attention/backends/mla/<file>
# ::<Builder>). None equals a modelled family's on every GPU (FlashAttention: ALWAYS on SM90/
# SM10x, UNIFORM_BATCH below; FlashInfer: by GPU and TRT-LLM kernels; Triton: ALWAYS), and their
# metadata (latent KV, decode/prefill split) is not the rig's, so a named MLA backend is refused.
MLA_CG_SUPPORT: dict[str, tuple[str, str]] = {
    "FLASH_ATTN_MLA": ("UNIFORM_BATCH", "flashattn_mla.py::FlashAttnMLAMetadataBuilder"),
    "FLASHINFER_MLA": ("ALWAYS", "flashinfer_mla.py::FlashInferMLAMetadataBuilder"),
    "CUTLASS_MLA": ("UNIFORM_SINGLE_TOKEN_DECODE", "cutlass_mla.py::CutlassMLAMetadataBuilder"),
    "FLASHMLA": ("UNIFORM_BATCH", "flashmla.py::FlashMLAMetadataBuilder"),
    "TRITON_MLA": ("UNIFORM_BATCH", "triton_mla.py::TritonMLAMetadataBuilder"),
}


def _mla_defaults_line() -> str:
    per_sm = ", ".join(
        f"{'SM' + str(sm) + 'x' if sm else 'other GPUs'}: {name}"
        for sm, name in MLA_PRIORITIES.items()
    )
    return f"vLLM's MLA default ({PRIORITIES_SOURCE}): {per_sm}"


def engine_backend(name: str) -> str:
    """The rig backend an engine's spelling (any case) runs as; one line for any other name,
    listing the valid ones and the closest."""
    key = name.strip().lower()
    if key in BACKEND_SPELLINGS:
        return BACKEND_SPELLINGS[key]
    if key in MLA_BACKENDS:
        level, builder = MLA_CG_SUPPORT[key.upper()]
        raise BadInput(
            f"--attention-backend {name!r} is an MLA backend ({builder}: {level}, vllm 0.33); "
            f"the rig does not model MLA metadata or graph support; {_mla_defaults_line()}",
            "leave --attention-backend out to plan the default, or pick one of "
            f"{', '.join(RIG_BACKENDS)}",
        )
    raise unknown_choice(
        "--attention-backend",
        name,
        [*RIG_BACKENDS, "FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "fa3"],
    )


@dataclass(frozen=True)
class DefaultBackend:
    """The backend vLLM picks when the launch line names none, and how the rig plans it."""

    engine_name: str  # as vLLM logs it (AttentionBackendEnum)
    rig_backend: str  # what the plan models
    why: str


# `vllm/platforms/cuda.py::_get_backend_priorities` (vllm 0.22-0.33; unchanged for the
# dense, causal, text-only case): the first backend that supports the layer wins. Dense:
# SM10x puts FLASHINFER first, every other GPU FLASH_ATTN. MLA: FLASHINFER_MLA on SM10x,
# TRITON_MLA on SM12x, FLASH_ATTN_MLA elsewhere.
DENSE_PRIORITIES: dict[int, tuple[str, ...]] = {
    10: ("FLASHINFER", "FLASH_ATTN", "TRITON_ATTN"),
    0: ("FLASH_ATTN", "FLASHINFER", "TRITON_ATTN"),
}
MLA_PRIORITIES: dict[int, str] = {10: "FLASHINFER_MLA", 12: "TRITON_MLA", 0: "FLASH_ATTN_MLA"}
PRIORITIES_SOURCE = "vllm/platforms/cuda.py::_get_backend_priorities"


def _flash_attn_takes(head_dim: int | None) -> bool:
    """`FlashAttentionBackend.supports_head_size` (vllm 0.33): multiples of 8 up to 256
    (larger only through FA4, not modelled)."""
    return head_dim is None or (head_dim % 8 == 0 and head_dim <= 256)


def vllm_default_backend(
    capability_major: int, *, mla: bool = False, head_dim: int | None = None
) -> DefaultBackend:
    """The attention backend vLLM picks for the target on a GPU of this SM generation."""
    gpu = f"SM{capability_major}x"
    if mla:
        name = MLA_PRIORITIES.get(capability_major, MLA_PRIORITIES[0])
        level, builder = MLA_CG_SUPPORT[name]
        return DefaultBackend(
            name,
            "flash_attn",
            f"vLLM's MLA default on {gpu} is {name} ({builder}: {level}); MLA is not modelled, "
            "planned as flash_attn",
        )
    order = DENSE_PRIORITIES.get(capability_major, DENSE_PRIORITIES[0])
    for name in order:
        if name == "FLASH_ATTN" and not _flash_attn_takes(head_dim):
            continue
        return DefaultBackend(name, BACKEND_SPELLINGS[name.lower()], f"vLLM default on {gpu}")
    raise AssertionError("TRITON_ATTN takes every layer")  # pragma: no cover


@dataclass(frozen=True)
class CubinRule:
    """Whether a fresh install of these releases has FlashInfer's TRT-LLM kernels on disk."""

    versions: VersionRange
    bundled: bool
    source: str


# The wheels' METADATA: vllm 0.20-0.25 require `flashinfer-cubin` (the TRT-LLM/XQA cubins) next
# to `flashinfer-python`; from 0.26 only `flashinfer-python`, whose kernels are downloaded from
# NVIDIA's artifactory on first use (an offline host has none).
CUBIN_RULES = (
    CubinRule(
        between(None, "0.26"),
        True,
        "vllm 0.20-0.25 METADATA: Requires-Dist flashinfer-cubin",
    ),
    CubinRule(
        between("0.26", None),
        False,
        "vllm 0.26-0.33 METADATA: flashinfer-python only, no flashinfer-cubin",
    ),
)


def trtllm_cubins_bundled(version: Version) -> CubinRule:
    return next(r for r in CUBIN_RULES if version in r.versions)
