"""vLLM's GPU model runners, by the names the rest of the package stores.

A vLLM release ships two runners of the V1 engine: the GPU model runner of
`vllm/v1/worker/gpu_model_runner.py` ("MRV1", the default for most architectures before Model
Runner V2 took over) and Model Runner V2 (`vllm/v1/worker/gpu/`, "MRV2"). They plan and replay
the drafter's graphs by different rules, so a profile, a plan and a run name the one they
rebuild. SGLang has one runner per release and names none.
"""

from __future__ import annotations

from eaglegraph.known.enums import StrEnum


class ModelRunner(StrEnum):
    MRV1 = "mrv1"
    MRV2 = "mrv2"


# How users and engines spell each runner: `--runner v1|v2`, the stored names, the
# `VLLM_USE_V2_MODEL_RUNNER` values (1 = MRV2, 0 = MRV1).
RUNNER_SPELLINGS: dict[str, ModelRunner] = {
    "v1": ModelRunner.MRV1,
    "mrv1": ModelRunner.MRV1,
    "0": ModelRunner.MRV1,
    "v2": ModelRunner.MRV2,
    "mrv2": ModelRunner.MRV2,
    "1": ModelRunner.MRV2,
}
