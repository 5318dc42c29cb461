"""vLLM's V1 GPU model runner (MRV1): its capture plan for one configuration.

Read from `vllm/v1/worker/gpu_model_runner.py` and `vllm/v1/cudagraph_dispatcher.py` of the
0.22–0.33 wheels (the rules below do not change across them):

- Sizes: the same default list as MRV2 (`VllmConfig._set_cudagraph_sizes`), then
  `CompilationConfig.resolve_cudagraph_mode_and_sizes` rounds the *global* list to multiples of
  K+1 (`adjust_cudagraph_sizes_for_spec_decode`) when the resolved mode's decode mode is FULL —
  for MRV1 only since 0.25 (`not use_v2_model_runner`), for both runners before.
- Target (`CudagraphDispatcher.initialize_cudagraph_keys`): one key per size for the mixed
  mode — FULL keys pad the request count to min(size, max_num_seqs), PIECEWISE keys leave it
  unpadded — and, when decode is FULL in a separate routine, FULL uniform-decode keys for the
  sizes in [K+1, (K+1)·max_num_seqs], at min(size // (K+1), max_num_seqs) requests.
- Drafter (`EagleProposer.initialize_cudagraph_keys`, `llm_base_proposer.py`): one dispatcher
  for every draft pass, PIECEWISE when the runner's mixed mode is PIECEWISE or FULL, else NONE;
  its graphs are captured by the drafter's `dummy_run` inside the target's PIECEWISE capture
  pass (`GPUModelRunner._dummy_run`), one pass per size.
"""

from __future__ import annotations

import dataclasses

from eaglegraph.known.profiles import Profile
from eaglegraph.rig.descriptors import BatchDescriptor
from eaglegraph.rig.modes import Mode

SOURCES = (
    "vllm/config/compilation.py::CompilationConfig.resolve_cudagraph_mode_and_sizes",
    "vllm/config/compilation.py::CompilationConfig.adjust_cudagraph_sizes_for_spec_decode",
    "vllm/v1/cudagraph_dispatcher.py::CudagraphDispatcher.initialize_cudagraph_keys",
    "vllm/v1/spec_decode/llm_base_proposer.py::EagleProposer.initialize_cudagraph_keys",
)


def mrv1_profile(profile: Profile) -> Profile:
    """`profile` with MRV1's rounding: the global list, only when decode graphs are FULL (the
    profile's MRV2 rounding switches do not apply to this runner)."""
    return dataclasses.replace(profile, per_descriptor_rounding=False, rounds_every_mode=False)


def target_keys(
    mode: Mode, sizes: list[int], max_num_seqs: int, decode_query_len: int
) -> list[BatchDescriptor]:
    """The target dispatcher's keys, ascending by size (decode key first at a size)."""
    keys: list[BatchDescriptor] = []
    mixed = mode.mixed_mode()
    if mixed is Mode.FULL:
        keys += [BatchDescriptor(Mode.FULL, s, min(s, max_num_seqs)) for s in sizes]
    elif mixed is Mode.PIECEWISE:
        keys += [BatchDescriptor(Mode.PIECEWISE, s, None) for s in sizes]
    if mode.decode_mode() is Mode.FULL and mode.separate_routine():
        q = decode_query_len
        keys += [
            BatchDescriptor(Mode.FULL, s, min(s // q, max_num_seqs), q)
            for s in sizes
            if q <= s <= q * max_num_seqs
        ]
    return sorted(keys, key=lambda d: (d.num_tokens, d.uniform_token_count is None))


def drafter_mode(resolved: Mode) -> Mode:
    """The drafter dispatcher's one mode: PIECEWISE where the runner's mixed mode captures."""
    return Mode.PIECEWISE if resolved.mixed_mode() in (Mode.PIECEWISE, Mode.FULL) else Mode.NONE


def drafter_keys(resolved: Mode, sizes: list[int]) -> list[BatchDescriptor]:
    if drafter_mode(resolved) is Mode.NONE:
        return []
    return [BatchDescriptor(Mode.PIECEWISE, s, None) for s in sizes]
