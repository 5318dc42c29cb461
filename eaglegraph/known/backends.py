"""Attention backends as users copy them from an engine's launch line, and what the rig models.

vLLM spells its backends as `AttentionBackendEnum` members (`--attention-backend FLASH_ATTN`,
`vllm/v1/attention/backends/registry.py`); SGLang as `--attention-backend` choices
(`fa3`, `flashinfer`, `triton`, `trtllm_mha`, ...; `sglang/srt/server_args.py`). The rig models
three metadata and graph-support families: FlashAttention (query_start_loc, seq_lens, block
table), FlashInfer (CSR kv_indptr) and Triton. An MLA backend (`FLASH_ATTN_MLA`,
`FLASHINFER_MLA`, `CUTLASS_MLA`, ...) reports its own graph support, which the rig does not
model yet: it is recognised and refused in one line rather than planned as a dense backend.
"""

from __future__ import annotations

from eaglegraph.errors import BadInput, unknown_choice

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


def engine_backend(name: str) -> str:
    """The rig backend an engine's spelling (any case) runs as; one line for any other name,
    listing the valid ones and the closest."""
    key = name.strip().lower()
    if key in BACKEND_SPELLINGS:
        return BACKEND_SPELLINGS[key]
    if key in MLA_BACKENDS:
        raise BadInput(
            f"--attention-backend {name!r} is an MLA backend; eaglegraph does not model the "
            "graph support of MLA backends yet",
            f"plan with one of {', '.join(RIG_BACKENDS)} for the nearest dense semantics",
        )
    raise unknown_choice(
        "--attention-backend",
        name,
        [*RIG_BACKENDS, "FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "fa3"],
    )
