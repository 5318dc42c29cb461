"""Configuration, capture phases and metrics read from realistic log lines."""

from __future__ import annotations

from eaglegraph.triage.diagnose import triage_text

VLLM_ENGINE = (
    "(EngineCore_DP0 pid=412) INFO 05-13 10:40:09 [core.py:93] Initializing a V1 LLM engine "
    "(v0.20.2) with config: model='meta-llama/Llama-3.1-8B-Instruct', speculative_config="
    "SpeculativeConfig(method='eagle3', model='/tmp/eagle3-draft', num_spec_tokens=3), "
    "tokenizer='meta-llama/Llama-3.1-8B-Instruct', tensor_parallel_size=4, "
    "pipeline_parallel_size=1, data_parallel_size=2, enforce_eager=False, kv_cache_dtype=fp8, "
    "quantization=fp8, compilation_config={'mode': <CompilationMode.VLLM_COMPILE: 3>, "
    "'cudagraph_mode': <CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>, 'cudagraph_capture_sizes': "
    "[1, 2, 4, 8, 16, 24, 32], 'max_cudagraph_capture_size': 32}"
)
DOWNGRADE = (
    "(EngineCore_DP0 pid=412) WARNING 05-13 10:40:31 [compilation.py:1390] "
    "CUDAGraphMode.FULL_AND_PIECEWISE is not supported with spec-decode for attention backend "
    "FlashInferBackend (support: AttentionCGSupport.UNIFORM_SINGLE_TOKEN_DECODE); setting "
    "cudagraph_mode=PIECEWISE"
)


def _bar(label: str, n: int, stop: int) -> str:
    """A tqdm bar as written to a file: one physical line, updates separated by CR."""
    return "\r".join(
        f"{label}: {int(100 * i / n):3d}%|{'#' * i}{' ' * (n - i)}| {i}/{n} [00:0{i % 10}<00:02, 4.2it/s]"
        for i in range(stop + 1)
    )


def test_vllm_config_dump_and_downgrade() -> None:
    log = "\n".join(
        [
            "(APIServer pid=1) INFO 05-13 10:40:01 [api_server.py:1805] vLLM API server version 0.20.2",
            VLLM_ENGINE,
            "(EngineCore_DP0 pid=412) INFO 05-13 10:40:15 [cuda.py:367] Using FLASHINFER attention "
            "backend out of potential backends: ['FLASHINFER', 'TRITON_ATTN'].",
            DOWNGRADE,
            _bar("Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)", 7, 7),
            "(EngineCore_DP0 pid=412) INFO 05-13 10:41:02 [gpu_model_runner.py:3480] Graph capturing "
            "finished in 21 secs, took 0.61 GiB",
        ]
    )
    r = triage_text(log)
    c = r.config
    assert (r.framework, r.version) == ("vllm", "0.20.2")
    assert (c.spec_method, c.draft_model, c.num_spec_tokens) == ("eagle3", "/tmp/eagle3-draft", 3)
    assert c.target_model == "meta-llama/Llama-3.1-8B-Instruct"
    assert (c.tp, c.pp, c.dp) == (4, 1, 2)
    assert (c.kv_cache_dtype, c.quantization, c.enforce_eager) == ("fp8", "fp8", False)
    assert c.capture_sizes == [1, 2, 4, 8, 16, 24, 32]
    assert c.cudagraph_mode_requested == "FULL_AND_PIECEWISE"
    assert c.cudagraph_mode_resolved == "PIECEWISE"
    assert [(m.from_mode, m.to_mode, m.line) for m in c.mode_changes] == [
        ("FULL_AND_PIECEWISE", "PIECEWISE", 4)
    ]
    assert (c.attention_backend, c.attention_backend_raw) == ("flashinfer", "FLASHINFER")
    assert c.memory.graph_taken_gib == 0.61
    cap = r.phase.captures[0]
    assert (cap.name, cap.mode, cap.done, cap.total, cap.finished) == (
        "target (mixed prefill-decode)",
        "PIECEWISE",
        7,
        7,
        True,
    )
    assert r.phase.captures_finished is True
    assert r.category == "mode-incompatibility"
    assert "--behavior vllm-0.20" in " ".join([r.reproduce or "", *r.reproduce_also])


def test_resolved_mode_inferred_from_capture_labels() -> None:
    log = "\n".join(
        [
            VLLM_ENGINE.replace("FULL_AND_PIECEWISE: (2, 1)", "FULL_DECODE_ONLY: (2, 0)"),
            _bar("Capturing CUDA graphs (decode, FULL)", 5, 5),
        ]
    )
    c = triage_text(log).config
    assert c.cudagraph_mode_requested == "FULL_DECODE_ONLY"
    assert c.cudagraph_mode_resolved == "FULL_DECODE_ONLY"


def test_capture_bar_stopped_then_error_is_capture_phase() -> None:
    log = "\n".join(
        [
            VLLM_ENGINE,
            _bar("Capturing CUDA graphs (decode, FULL)", 12, 9),
            "(EngineCore_DP0 pid=412) ERROR 05-13 10:41:02 [core.py:710] Traceback (most recent call last):",
            "(EngineCore_DP0 pid=412) ERROR 05-13 10:41:02 [core.py:710] RuntimeError: CUDA error: "
            "an illegal memory access was encountered",
        ]
    )
    r = triage_text(log)
    assert r.phase.at_failure == "capture"
    assert "stopped at 9/12" in r.phase.detail
    assert r.category == "capture-failure"
    assert r.reproduce.startswith(
        "eaglegraph capture tiny-llama-eagle3 --mode FULL_AND_PIECEWISE --pool "
    )


def test_mrv2_drafter_labels_and_acceptance_metrics() -> None:
    log = "\n".join(
        [
            "Capturing CUDA graphs (PIECEWISE): 49/49",
            "Capturing CUDA graphs (FULL): 31/31",
            "Capturing <drafter> CUDA graphs (FULL): 31/31",
            "(APIServer pid=1) INFO 05-13 10:46:43 [loggers.py:271] SpecDecoding metrics: Mean "
            "acceptance length: 3.16, Accepted throughput: 96.91 tokens/s, Drafted throughput: 224.80 "
            "tokens/s, Accepted: 97 tokens, Drafted: 225 tokens, Per-position acceptance rate: 0.844, "
            "0.600, 0.378, 0.222, 0.111, Avg Draft acceptance rate: 43.1%",
        ]
    )
    r = triage_text(log)
    names = [(c.name, c.mode, c.finished) for c in r.phase.captures]
    assert names == [
        ("target", "PIECEWISE", True),
        ("target", "FULL", True),
        ("draft", "FULL", True),
    ]
    assert r.config.cudagraph_mode_resolved == "FULL_AND_PIECEWISE"
    acc = r.config.acceptance
    assert (acc.mean_length_last, acc.rate_last) == (3.16, 0.431)
    assert acc.per_position_last == [0.844, 0.6, 0.378, 0.222, 0.111]


def test_sglang_server_args_and_capture_phases() -> None:
    args = (
        "[2026-02-26 05:19:58] server_args=ServerArgs(model_path='zai-org/GLM-5-FP8', "
        "tokenizer_path='zai-org/GLM-5-FP8', attention_backend='flashinfer', "
        "decode_attention_backend=None, mem_fraction_static=0.88, tp_size=8, dp_size=1, ep_size=8, "
        "enable_dp_attention=False, kv_cache_dtype='fp8_e4m3', page_size=64, disable_cuda_graph=False, "
        "cuda_graph_max_bs=128, cuda_graph_bs=None, speculative_algorithm='NEXTN', "
        "speculative_draft_model_path='zai-org/GLM-5-FP8', speculative_num_steps=3, "
        "speculative_eagle_topk=1, speculative_num_draft_tokens=4, max_running_requests=64)"
    )
    log = "\n".join(
        [
            args,
            "[2026-02-26 05:25:01 TP0 EP0] Capture target verify CUDA graph begin. backend=full, "
            "num_tokens_per_req=4, bs=[1, 2, 4, 8, 16], avail mem=30.36 GB",
            _bar("Capturing batches (bs=16 avail_mem=29.83 GB)", 5, 5),
            "[2026-02-26 05:25:21 TP0 EP0] Capture target verify CUDA graph end. Time elapsed: 20.11 s. "
            "mem usage=0.54 GB. avail mem=29.82 GB.",
            "[2026-02-26 05:25:22 TP0 EP0] Capture draft cuda graph begin. This can take up to several "
            "minutes. avail mem=29.80 GB",
            "[2026-02-26 05:25:23 TP7 EP7] Capture draft cuda graph begin. This can take up to several "
            "minutes. avail mem=29.80 GB",
        ]
    )
    r = triage_text(log)
    c = r.config
    assert r.framework == "sglang"
    assert (c.spec_method, c.draft_model, c.num_spec_tokens, c.topk, c.num_draft_tokens) == (
        "mtp",
        "zai-org/GLM-5-FP8",
        3,
        1,
        4,
    )
    assert (c.attention_backend, c.tp, c.dp, c.ep, c.dp_attention) == ("flashinfer", 8, 1, 8, False)
    assert (c.kv_cache_dtype, c.cuda_graph_max_bs, c.max_num_seqs) == ("fp8_e4m3", 128, 64)
    assert c.memory.mem_fraction_static == 0.88
    assert c.capture_sizes == [1, 2, 4, 8, 16]
    assert c.cudagraph_mode_requested == "FULL"
    verify, draft = r.phase.captures[0], r.phase.captures[1]
    assert (verify.name, verify.finished, verify.mem_usage_gb, verify.total) == (
        "target verify",
        True,
        0.54,
        5,
    )
    assert (draft.name, draft.finished, draft.begin_line) == ("draft decode", False, 5)
    # The log ends inside the draft capture with no error: a stall, with capture as runner-up.
    assert r.phase.at_failure == "capture"
    assert r.category == "hang"
    assert r.alternatives[0].category == "capture-failure"
    assert (
        r.reproduce
        == "eaglegraph capture tiny-deepseek-mtp --mode FULL --pool shared --framework sglang -K 3"
    )
    # the probe plans a few requests (padding bugs need only a few; it runs as printed on CPU)
    assert r.reproduce_also[0].startswith("eaglegraph probe tiny-deepseek-mtp --mode FULL ")
    assert "--framework sglang" in r.reproduce_also[0]


def test_collect_env_gpu_and_oom_capacity() -> None:
    log = "\n".join(
        [
            "vLLM Version                 : 0.10.0",
            "GPU models and configuration:",
            "GPU 0: NVIDIA H100 80GB HBM3",
            "GPU 1: NVIDIA H100 80GB HBM3",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total "
            "capacity of 79.19 GiB of which 512.00 MiB is free.",
        ]
    )
    r = triage_text(log)
    assert (r.framework, r.version) == ("vllm", "0.10.0")
    assert r.config.gpu == "NVIDIA H100 80GB HBM3"
    assert r.config.gpu_memory_gib == 79.19
    assert r.category == "pool-memory/oom"


def test_flashinfer_resolution_gives_arch_and_decode_kernel() -> None:
    r = triage_text(
        "(EngineCore_DP0 pid=7) INFO 03-01 10:00:00 [flashinfer.py:280] FlashInfer resolved query "
        "dtypes: prefill=torch.bfloat16, decode=torch.bfloat16, decode_backend=xqa, "
        "kv_cache_dtype=torch.float8_e4m3fn, arch=sm121"
    )
    assert (r.config.gpu_arch, r.config.decode_backend, r.config.attention_backend) == (
        "sm121",
        "xqa",
        "flashinfer",
    )


def test_command_lines_of_both_frameworks() -> None:
    vllm = triage_text(
        "$ vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 2 --max-num-seqs 128 "
        '--speculative-config \'{"method": "eagle3", "model": "/ckpt/draft", '
        '"num_speculative_tokens": 4}\' --compilation-config \'{"cudagraph_mode": "FULL_DECODE_ONLY"}\''
    ).config
    assert (vllm.spec_method, vllm.draft_model, vllm.num_spec_tokens) == (
        "eagle3",
        "/ckpt/draft",
        4,
    )
    assert (vllm.tp, vllm.max_num_seqs, vllm.cudagraph_mode_requested) == (
        2,
        128,
        "FULL_DECODE_ONLY",
    )
    sgl = triage_text(
        "python -m sglang.launch_server --model-path Qwen/Qwen3-8B --speculative-algorithm EAGLE3 "
        "--speculative-draft-model-path Tengyunw/qwen3_8b_eagle3 --speculative-num-steps 6 "
        "--speculative-eagle-topk 10 --speculative-num-draft-tokens 32 --tp 2 --attention-backend triton"
    )
    c = sgl.config
    assert sgl.framework == "sglang"
    assert (c.spec_method, c.draft_model, c.num_spec_tokens, c.topk) == (
        "eagle3",
        "Tengyunw/qwen3_8b_eagle3",
        6,
        10,
    )
    assert (c.tp, c.attention_backend, c.target_model) == (2, "triton", "Qwen/Qwen3-8B")


def test_trtllm_yaml_options() -> None:
    r = triage_text(
        "speculative_config:\n  decoding_type: Eagle3\n  max_draft_len: 3\n"
        "  speculative_model_dir: /models/eagle3\nenable_attention_dp: true\n"
        "cuda_graph_config:\n  enable_padding: true\n  batch_sizes: [1, 2, 4, 8]\n"
    )
    c = r.config
    assert r.framework == "trtllm"
    assert (c.spec_method, c.num_spec_tokens, c.draft_model) == ("eagle3", 3, "/models/eagle3")
    assert (c.dp_attention, c.capture_sizes, c.cudagraph_mode_requested) == (
        True,
        [1, 2, 4, 8],
        "FULL",
    )


def test_enforce_eager_resolves_to_none_and_old_compilation_dict() -> None:
    engine = VLLM_ENGINE.replace("enforce_eager=False", "enforce_eager=True")
    assert triage_text(engine).config.cudagraph_mode_resolved == "NONE"
    legacy = triage_text(
        "INFO 03-01 10:00:00 [core.py:58] Initializing a V1 LLM engine (v0.9.1) with config: "
        "model='m', speculative_config=None, compilation_config={'level': 3, 'use_cudagraph': True, "
        "'full_cuda_graph': True, 'cudagraph_capture_sizes': [1, 2, 4]}"
    ).config
    assert (legacy.cudagraph_mode_requested, legacy.spec_method, legacy.capture_sizes) == (
        "FULL",
        None,
        [1, 2, 4],
    )


def test_running_requests_shrinking_before_an_async_fault() -> None:
    lines = [
        f"[2025-07-25 07:53:{10 + i:02d} TP0] Decode batch. #running-req: {n}, #token: 9000, token "
        f"usage: 0.10, accept len: 2.40, cuda graph: True, gen throughput (token/s): 900.00, "
        f"#queue-req: 0, "
        for i, n in enumerate([32, 32, 30, 24, 16, 12])
    ]
    lines.append(
        "[2025-07-25 07:53:20 TP0] Scheduler hit an exception: Traceback (most recent call last):"
    )
    lines.append("RuntimeError: CUDA error: an illegal memory access was encountered")
    r = triage_text("\n".join(lines))
    assert r.category == "stale-buffer-read"
    assert r.phase.at_failure == "serving"
    assert any(e.signal == "health.running" for e in r.evidence)
    assert r.config.acceptance.mean_length_last == 2.4
