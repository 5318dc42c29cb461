"""SGLang 0.5.x releases as data: which profile each release runs under, and the default
attention backend each release range picks (issue 28), each row from the cited wheel."""

from __future__ import annotations

from itertools import pairwise

import pytest

from eaglegraph.known.choose import profile_for_version
from eaglegraph.known.profiles import engine_profiles
from eaglegraph.known.sglang_backends import sglang_default_backend
from eaglegraph.known.versions import parse_version

pytestmark = pytest.mark.fast

# every 0.5.x release on PyPI (newest post release read) -> its profile
RELEASE_PROFILE = {
    "0.5.1.post3": "sglang-pre-10892",
    "0.5.2": "sglang-pre-10892",
    "0.5.3.post3": "sglang-0.5.3",
    "0.5.4.post3": "sglang-0.5.4",
    "0.5.5.post3": "sglang-0.5.4",
    "0.5.6.post2": "sglang-0.5.4",
    "0.5.7": "sglang-0.5.4",
    "0.5.8.post1": "sglang-0.5.8",
    "0.5.9": "sglang-0.5.8",
    "0.5.10.post1": "sglang-0.5.10",
    "0.5.11": "sglang-0.5.11",
    "0.5.12.post1": "sglang-0.5.11",
    "0.5.13.post1": "sglang-0.5.13",
    "0.5.14": "sglang-0.5.14",
    "0.5.15.post1": "sglang-0.5.15",
    "0.5.16": "sglang-0.5.15",
    "0.5.17": "sglang-0.5.15",
    "0.5.18": "sglang-0.5.18",  # MLA keeps default breakable prefill graphs
    "0.5.19": "sglang-0.5.18",
    "0.5.20": "sglang-0.5.20",
    "0.5.21": "sglang-0.5.20",
    "0.5.22": "sglang-0.5.20",
    "0.5.23": "sglang-current",
}


@pytest.mark.parametrize(("release", "profile"), list(RELEASE_PROFILE.items()))
def test_each_release_runs_under_its_profile(release: str, profile: str) -> None:
    assert profile_for_version("sglang", release).name == profile


def test_sglang_profiles_tile_the_releases_without_gaps() -> None:
    mainline = [p for p in engine_profiles("sglang") if p.versions.since != p.versions.until]
    for before, after in pairwise(mainline):
        assert before.versions.until == after.versions.since, (before.name, after.name)
    assert mainline[0].versions.since is None and mainline[-1].versions.until is None


def test_the_worker_flags_follow_the_releases() -> None:
    v1 = [p.name for p in engine_profiles("sglang") if not p.sglang_spec_v2_default]
    assert v1 == [
        "sglang-pre-10892",
        "sglang-0.5.3",
        "sglang-0.5.4",
        "sglang-0.5.8",
        "sglang-0.5.10",
    ]  # EAGLEWorker default
    bcg = [p.name for p in engine_profiles("sglang") if p.sglang_draft_breakable_prefill]
    assert bcg[0] == "sglang-0.5.13"  # force_for_draft_worker first in 0.5.13


# (release, SM major, arch, mla, algorithm, topk) -> SGLang's default backend
# 0.5.1-0.5.3 model_runner.py::ModelRunner.model_specific_adjustment; 0.5.4-0.5.7
# server_args.py::ServerArgs._handle_attention_backend_compatibility; 0.5.8-0.5.22
# ::_get_default_attn_backend (0.5.19+ arg_groups/model_override_base.py::get_default_attn_backend)
DEFAULTS = [
    # Hopper MHA: fa3 only for the listed architectures until 0.5.7
    ("0.5.2", 9, "LlamaForCausalLM", False, "EAGLE3", None, "fa3"),
    ("0.5.2", 9, "MistralForCausalLM", False, "EAGLE3", None, "flashinfer"),
    ("0.5.5", 9, "Olmo2ForCausalLM", False, None, None, "fa3"),  # listed from 0.5.4
    ("0.5.3", 9, "Olmo2ForCausalLM", False, None, None, "flashinfer"),
    ("0.5.7", 9, "MistralForCausalLM", False, "EAGLE", 1, "flashinfer"),
    ("0.5.8", 9, "MistralForCausalLM", False, "EAGLE", 1, "fa3"),  # any architecture
    ("0.5.12", 9, "LlamaForCausalLM", False, "EAGLE", 4, "flashinfer"),  # a tree
    # SM100 MHA: flashinfer until 0.5.5, trtllm_mha with topk one from 0.5.6
    ("0.5.5", 10, "LlamaForCausalLM", False, "EAGLE", 1, "flashinfer"),
    ("0.5.6", 10, "LlamaForCausalLM", False, "EAGLE", None, "trtllm_mha"),
    ("0.5.7", 10, "LlamaForCausalLM", False, "EAGLE", None, "flashinfer"),  # topk not given
    ("0.5.7", 10, "LlamaForCausalLM", False, "EAGLE", 1, "trtllm_mha"),
    ("0.5.6", 12, "LlamaForCausalLM", False, None, None, "trtllm_mha"),  # is_blackwell: SM12x
    ("0.5.7", 12, "LlamaForCausalLM", False, None, None, "flashinfer"),
    # DeepSeek V3 on SM100: trtllm_mla from 0.5.3, the MLA default before
    ("0.5.2", 10, "DeepseekV3ForCausalLM", True, "EAGLE", None, "flashinfer"),
    ("0.5.3", 10, "DeepseekV3ForCausalLM", True, "EAGLE", None, "trtllm_mla"),
    ("0.5.9", 9, "DeepseekV3ForCausalLM", True, "EAGLE", None, "fa3"),
]


@pytest.mark.parametrize(("release", "sm", "arch", "mla", "algo", "topk", "want"), DEFAULTS)
def test_default_backend_per_release(
    release: str, sm: int, arch: str, mla: bool, algo: str | None, topk: int | None, want: str
) -> None:
    version = parse_version(release)
    assert version is not None
    chosen = sglang_default_backend(
        version, sm, mla=mla, architecture=arch, speculative_algorithm=algo, eagle_topk=topk
    )
    assert chosen.engine_name == want
