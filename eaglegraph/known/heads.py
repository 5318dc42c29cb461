"""Logits as the engines compute them: the lm_head's output dtype, and where a sampler widens.

vLLM's `LogitsProcessor._apply_head` runs the lm_head in `head_dtype`, which defaults to the
model dtype (bf16 for a bf16 checkpoint); the greedy draft sampler
(`spec_decode/speculator.py::sample_draft`) takes the argmax of those logits as they are, so a
captured draft graph holds one bf16 `[rows, vocab]` buffer. The target's sampler
(`v1/sample/sampler.py::Sampler.forward`) casts its logits to fp32 before sampling, eagerly,
outside every graph. Widening bf16 to fp32 is exact, so greedy tokens are the same either way:
only memory differs. (SGLang: its logits processor also returns the model dtype; its draft
top-k reads them directly. Not yet checked against its source, so the same rule is assumed.)
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HeadDtype:
    engine: str
    target_sampler_widens: bool  # the target's logits are cast to fp32 before sampling
    draft_sampler_widens: bool  # the draft's logits are cast to fp32 inside its graphs
    source: str


HEAD_DTYPES = {
    "vllm": HeadDtype(
        "vllm",
        target_sampler_widens=True,
        draft_sampler_widens=False,
        source="vllm/model_executor/layers/logits_processor.py::LogitsProcessor._apply_head; "
        "vllm/v1/sample/sampler.py::Sampler.forward; "
        "vllm/v1/worker/gpu/spec_decode/speculator.py::sample_draft",
    ),
    "sglang": HeadDtype(
        "sglang",
        target_sampler_widens=True,
        draft_sampler_widens=False,
        source="assumed as vLLM (not checked against SGLang's source)",
    ),
}


def head_dtype(engine: str) -> HeadDtype:
    return HEAD_DTYPES.get(engine, HEAD_DTYPES["vllm"])
