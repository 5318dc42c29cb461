"""What a stack frame means for a speculative-decoding server with CUDA graphs.

Both `triage` (tracebacks in a log) and `stacks` (py-spy dumps of a live process) need the
same reading of a frame: is it capturing a graph, replaying one, proposing draft tokens,
sampling/verifying, or waiting on a collective? Function names carry this across vLLM, SGLang
and TensorRT-LLM versions better than file paths, which move between releases, so function
names decide first and paths only add what names cannot say.

A base module (imports only the tag names from `results/`), shared by `triage/` and `system/`.
"""

from __future__ import annotations

import re

from eaglegraph.results.stacks import (
    CAPTURE,
    COLLECTIVE,
    IDLE,
    PROFILE,
    REPLAY,
    SAMPLING,
    SERVING,
    SPEC,
    STARTUP,
)

# Functions that capture CUDA graphs. "capture" alone is too broad: EAGLE-3 "captures" aux hidden
# states (set_eagle3_layers_to_capture, capture_aux_hidden_states) without any graph.
_CAPTURE_FUNC = re.compile(
    r"(?i)capture|init_cuda_graphs?|init_device_graphs?|cudagraph_capture|cuda_graph_capture"
)
_CAPTURE_EXCLUDE = re.compile(
    r"(?i)aux|hidden|layers_to_capture|capture_mode|logprob|stdout|output"
)
_CAPTURE_CODE = re.compile(
    r"torch\.cuda\.graph\(|\.capture_begin\(|\.capture_end\(|capture_end\(\)|graph_capture\(|"
    r"CUDAGraph::capture"
)
_GRAPHS_FILE = re.compile(r"torch[/\\]cuda[/\\]graphs\.py$")
_REPLAY_FUNC = re.compile(r"(?i)replay|graphlaunch|graph_launch")
_REPLAY_CODE = re.compile(r"\.replay\(\)|CUDAGraph::replay|cudaGraphLaunch")
_SPEC = re.compile(
    r"(?i)eagle|spec_?decod|speculat|draft|propos|\bmtp\b|_mtp|mtp_|medusa|ngram|dflash|"
    r"multi_token|verify|nextn|autoregressive/speculator"
)
_SAMPLING = re.compile(
    r"(?i)sampl|rejection|gumbel|top_?k_?top_?p|multinomial|tree_speculative|greedy|argmax"
)
_COLLECTIVE = re.compile(
    r"(?i)all_?reduce|all_?gather|reduce_?scatter|broadcast|barrier|nccl|ProcessGroup|"
    r"all_to_all|custom_ar|cross_device|distributed_c10d|\bwait_tensor\b|_sync_dp|sync_ranks"
)
_SERVING = re.compile(
    r"^(?:\w+\.)*(?:event_loop\w*|run_batch|execute_model\w*|step|step_with_batch_queue|"
    r"run_busy_loop|_process_engine_step|forward_batch_generation|"
    r"forward_batch_speculative_generation|worker_busy_loop|_run_engine|run_engine_loop|"
    r"process_batch_result\w*|_forward_step)$"
)
_STARTUP = re.compile(
    r"^(?:\w+\.)*(?:__init__|load_model|init_\w+|_init_\w+|initialize\w*|_initialize\w*|"
    r"launch_\w+|init_device|setup_model|create_engine_config|build_model)$"
)
_PROFILE = re.compile(
    r"(?i)profile_run|determine_available_memory|profile_cudagraph_memory|_dummy_sampler_run|"
    r"determine_num_available_blocks|profile_max_num_token|init_memory_pool"
)
_IDLE = re.compile(
    r"^(?:\w+\.)*(?:wait|_wait_for_tstate_lock|select|poll|epoll|_poll|recv\w*|_recv\w*|"
    r"accept|get|_get|sleep|run_forever|_run_once|read|readline|join|acquire|serve_forever|"
    r"_worker|worker)$"
)
_IDLE_FILE = re.compile(
    r"(?:threading|selectors|queue|socket|asyncio[/\\]\w+|multiprocessing[/\\]\w+|"
    r"concurrent[/\\]futures[/\\]\w+|zmq[/\\]\w+)\.py$"
)


# Package roots whose module paths mean something; words elsewhere in a path (a user's
# `work/drafts/server.py`, eaglegraph's own modules) say nothing about the engine's phase.
_ENGINE_ROOT = re.compile(r"(?:^|[/\\])((?:vllm|sglang|tensorrt_llm|torch)[/\\].*)$")


def module_path(file: str) -> str:
    """The part of `file` inside an engine or torch package ('' for any other file)."""
    found = _ENGINE_ROOT.search(file or "")
    return found.group(1) if found else ""


def classify(func: str, file: str = "", code: str | None = None) -> tuple[str, ...]:
    """Tags for one frame, most specific first; empty when the frame means nothing special."""
    tags: list[str] = []
    code = code or ""
    name = func or ""
    where = f"{module_path(file)} {name}"
    if (
        (_CAPTURE_FUNC.search(name) and not _CAPTURE_EXCLUDE.search(name))
        or _CAPTURE_CODE.search(code)
        or (_GRAPHS_FILE.search(file) and name.endswith(("__exit__", "__enter__")))
    ):
        tags.append(CAPTURE)
    elif _REPLAY_FUNC.search(name) or _REPLAY_CODE.search(code):
        tags.append(REPLAY)
    if _COLLECTIVE.search(where) or _COLLECTIVE.search(code):
        tags.append(COLLECTIVE)
    if _SAMPLING.search(name) or _SAMPLING.search(code):
        tags.append(SAMPLING)
    if _SPEC.search(where):
        tags.append(SPEC)
    if _PROFILE.search(name):
        tags.append(PROFILE)
    if _SERVING.match(name):
        tags.append(SERVING)
    elif _STARTUP.match(name):
        tags.append(STARTUP)
    if not tags and _IDLE.match(name) and (_IDLE_FILE.search(file) or not file):
        tags.append(IDLE)
    return tuple(tags)
