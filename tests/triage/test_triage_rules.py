"""The reasoning rules: primary vs consequences, mechanism vs phase, reporter A/B tests."""

from __future__ import annotations

from eaglegraph.results.triage import TriageConfig
from eaglegraph.triage.diagnose import triage_text
from eaglegraph.triage.recommend import behavior_for

IMA = "RuntimeError: CUDA error: an illegal memory access was encountered"
NCCL = (
    "[rank0]:[E811 04:19:16.120031 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective "
    "operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600071 ms"
)


def test_watchdog_printed_first_is_still_a_consequence() -> None:
    r = triage_text("\n".join([NCCL, "Traceback (most recent call last):", IMA]))
    assert r.primary_error.line == 3
    assert [e.line for e in r.secondary_errors] == [1]
    assert r.category != "hang"


def test_watchdog_alone_is_a_hang() -> None:
    r = triage_text(NCCL)
    assert r.primary_error is None
    assert r.category == "hang"
    assert r.reproduce is None  # a hang has no reproduction; the next step is every rank's stack
    assert any("eaglegraph stacks" in c for c in r.checks)
    assert r.distributed is not None and r.distributed.kind == "collective-wait"


def test_a_wrapper_line_names_the_mechanism_when_nothing_else_does() -> None:
    r = triage_text(
        "(EngineCore_DP0 pid=5) ERROR 04-10 09:12:33 [core.py:710] RuntimeError: Worker failed with "
        "error 'CUDA error: an illegal memory access was encountered', please check the stack trace "
        "above for the root cause"
    )
    assert r.primary_error is not None and r.primary_error.signal == "cuda.illegal-address"


def test_engine_dead_exception_is_never_primary() -> None:
    r = triage_text("vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.")
    assert r.primary_error is None


def test_oom_during_capture_is_oom_not_capture_failure() -> None:
    r = triage_text(
        "\n".join(
            [
                "[2025-01-01 10:00:00 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=1.20 GB",
                "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 20.00 MiB.",
            ]
        )
    )
    assert r.category == "pool-memory/oom"
    assert r.phase.at_failure == "capture"
    assert r.alternatives[0].category == "capture-failure"
    assert "sgl-project/sglang#3430" in [f.ref for f in r.fixes]


def test_async_fault_during_capture_is_capture_failure() -> None:
    r = triage_text(
        "\n".join(
            [
                "(EngineCore_DP0 pid=1) INFO 01-01 10:00:00 [core.py:93] Initializing a V1 LLM engine (v0.23.0) "
                "with config: model='m', speculative_config=SpeculativeConfig(method='eagle3', model='d', num_spec_tokens=3), "
                "tensor_parallel_size=2",
                "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):  40%|####      | 4/10",
                "Fatal Python error: Segmentation fault",
            ]
        )
    )
    assert r.category == "capture-failure"
    assert "vllm-project/vllm#32818" in [f.ref for f in r.fixes]


def test_reporter_ab_with_graphs_off_still_failing_points_at_compile() -> None:
    r = triage_text(
        "\n".join(
            [
                "vLLM Version                 : 0.11.0",
                "With cudagraph_mode=NONE it still crashes, only --enforce-eager works.",
                "RuntimeError: CUDA error: misaligned address",
            ]
        )
    )
    assert r.category == "other"
    assert "vllm-project/vllm#48894" in [f.ref for f in r.fixes]


def test_reporter_says_eager_fixes_it() -> None:
    r = triage_text(
        "\n".join(
            [
                "The crash goes away with --enforce-eager, so it is graph related.",
                "(APIServer pid=1) INFO 05-13 10:46:43 [loggers.py:271] Engine 000: Running: 40 reqs",
                IMA,
            ]
        )
    )
    assert r.category == "stale-buffer-read"
    assert any("without graphs" in c for c in r.checks)


def test_acceptance_drop_without_collapse() -> None:
    lines = [
        "(APIServer pid=1) INFO 05-13 10:4{i}:43 [loggers.py:271] SpecDecoding metrics: Mean acceptance "
        f"length: {m}, Avg Draft acceptance rate: {rate}%".replace("{i}", str(i))
        for i, (m, rate) in enumerate([(3.2, 61.0), (3.1, 58.5), (1.4, 12.0), (1.3, 9.1)])
    ]
    r = triage_text("\n".join(lines))
    assert r.category == "acceptance-regression"
    assert r.config.acceptance.rate_first == 0.61 and r.config.acceptance.rate_last == 0.091


def test_healthy_log_with_nothing_to_say() -> None:
    r = triage_text(
        "(APIServer pid=1) INFO 05-13 10:46:43 [loggers.py:271] Engine 000: Running: 4 reqs\n"
    )
    assert r.category == "other" and r.confidence <= 0.1
    assert r.findings[0].severity.value == "info"


def test_behavior_profiles_follow_versions() -> None:
    def b(framework: str, version: str | None, runner: str | None = None) -> str:
        return behavior_for(TriageConfig(framework=framework, version=version, runner=runner))[0]

    assert b("vllm", "0.19.1", "mrv2") == "vllm-pre-39773"
    assert b("vllm", "0.20.2") == "vllm-0.20"
    assert b("vllm", "0.22.1rc1.dev23+g6bdabbad5") == "vllm-0.22"
    assert b("vllm", "0.23.0") == "vllm-0.23"
    assert b("vllm", None) == "vllm-current"
    assert b("sglang", "0.4.5") == "sglang-pre-10892"
    assert b("sglang", "v0.5.4.post1") == "sglang-0.5.4"
    assert b("sglang", None) == "sglang-current"


def test_presets_match_family_and_kind() -> None:
    r = triage_text(
        "INFO 03-01 10:00:00 [core.py:58] Initializing a V1 LLM engine (v0.23.0) with config: "
        "model='Qwen/Qwen3-8B', speculative_config=SpeculativeConfig(method='eagle3', "
        "model='/data/draft', num_spec_tokens=3)\n" + IMA
    )
    assert r.reproduce is not None and "tiny-qwen3-eagle3" in r.reproduce
    assert "/data/draft" not in r.reproduce  # never the user's path: it runs on a fresh machine
    r = triage_text(
        "INFO 03-01 10:00:00 [core.py:58] Initializing a V1 LLM engine (v0.23.0) with config: "
        "model='meta-llama/Llama-3.1-8B', speculative_config=SpeculativeConfig(method='eagle', "
        "model='None', num_spec_tokens=5)\ntorch.OutOfMemoryError: CUDA out of memory."
    )
    assert r.category == "pool-memory/oom"
    assert (
        r.reproduce
        == "eaglegraph inspect tiny-llama-eagle1 --behavior vllm-0.23 -K 5 --predict-memory"
    )


def test_reproduce_pool_follows_the_version_profile() -> None:
    """The deployment's pool is the profile's: every vLLM before 0.23 used a dedicated one."""

    def oom(version: str) -> str:
        return triage_text(
            f"INFO 03-01 10:00:00 [core.py:58] Initializing a V1 LLM engine (v{version}) with "
            "config: model='meta-llama/Llama-3.1-8B', speculative_config=SpeculativeConfig("
            "method='eagle', model='None', num_spec_tokens=5)\n"
            "torch.OutOfMemoryError: CUDA out of memory."
        ).reproduce_also[0]

    for version in ("0.19.1", "0.20.2", "0.22.0"):
        assert "--pool dedicated" in oom(version), version
    assert "--pool shared" in oom("0.24.0")


def test_log_weights_are_data_not_code() -> None:
    """With an empty rule table the log carries no weight: every weight comes from known/."""
    import io

    from eaglegraph.known.triage_log_rules import LOG_RULES
    from eaglegraph.triage import facts, rules
    from eaglegraph.triage.scan import scan

    state = scan(
        io.BytesIO(("\n".join([NCCL, "Traceback (most recent call last):", IMA])).encode())
    )
    found = facts.read_log(state)
    assert "log.mech-async" in found and "log.fault-bare" in found
    assert rules.weigh((), found) == []
    weighed = rules.weigh(LOG_RULES, found)
    assert weighed and all(c.hits for c in weighed if c.weight >= 1.0)


def test_every_rule_names_facts_the_reader_produces() -> None:
    """A typo in a fact name would make a rule silently dead: every fact a log rule or a
    statement rule names is one the fact reader, the signal-fact table or a statement makes."""
    import inspect
    import re

    from eaglegraph.known.triage_log_rules import LOG_RULES, SIGNAL_FACTS
    from eaglegraph.known.triage_rules import RULES, STATEMENTS
    from eaglegraph.known.triage_signals import Mechanism
    from eaglegraph.triage import facts, ticket

    source = inspect.getsource(facts)
    made = {sf.fact for sf in SIGNAL_FACTS} | {s.id for s in STATEMENTS}
    made |= set(re.findall(r'"(says\.[\w-]+)"', inspect.getsource(ticket)))
    mechs = {m.value for m in Mechanism}
    for rule in (*LOG_RULES, *RULES):
        for fact in (*rule.needs, *rule.any_of, *rule.unless):
            m = re.fullmatch(r"(?:log\.mech-|mech\.)([\w-]+)", fact)
            if m:
                assert m.group(1) in mechs, (rule.id, fact)
            elif re.fullmatch(r"(?:phase|fw|draft|attn)\.[\w-]+", fact):
                continue  # named after a value: a phase, an engine, a draft kind, a backend
            else:
                assert fact in made or f'"{fact}"' in source, (rule.id, fact)


def test_signal_facts_name_signals_that_exist() -> None:
    from eaglegraph.known.triage_log_rules import SIGNAL_FACTS
    from eaglegraph.triage.registry import patterns

    recorded = {p.id for p in patterns()} | {"pyspy.frame", "mode.downgrade", "mode.override"}
    for sf in SIGNAL_FACTS:
        assert set(sf.signals) <= recorded, sf


def test_categories_serialise_as_their_plain_strings() -> None:
    """The enums keep the triage/1 JSON byte-identical to the strings they replaced."""
    import json

    from eaglegraph.results.triage import CATEGORIES, Category, Role
    from eaglegraph.serial import to_jsonable

    assert json.dumps({Category.OOM: [Category.OOM, Role.PRIMARY]}) == (
        '{"pool-memory/oom": ["pool-memory/oom", "primary"]}'
    )
    assert to_jsonable({Category.STALE: 1.0}) == {"stale-buffer-read": 1.0}
    assert f"triage.{Category.OOM.replace('/', '-')}" == "triage.pool-memory-oom"
    assert [str(c) for c in CATEGORIES][-1] == "other"
