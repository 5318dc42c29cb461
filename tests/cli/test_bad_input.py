"""Every class of bad input, fed to every command that takes it: exit 2, one line, no traceback.

Each case runs in-process (click's CliRunner) and is refused before any work starts, so the
module stays fast. The line must name the input it refuses, so a user knows what to fix.
"""

from __future__ import annotations

import json
import os
import random
import re
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from eaglegraph.cli import cli
from eaglegraph.errors import ERROR_SCHEMA

PRESET = "tiny-llama-eagle3"
CONFIG_ONLY = "llama3.1-8b-eagle3"
PAIR_COMMANDS = ("inspect", "capture", "probe")  # memdiff needs CUDA first: see below
RIG_COMMANDS = ("capture", "probe")


def run(*args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), input=stdin)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"traceback for {args}: {result.exception!r}")
    return result.exit_code, result.stdout, result.stderr


def refused(args: list[str], names: str, code: int = 2, stdin: bytes | None = None) -> str:
    """Run, then assert: the exit code, one stderr line, naming `names`, nothing on stdout."""
    exit_code, out, err = run(*args, stdin=stdin)
    lines = err.strip().splitlines()
    assert exit_code == code, (args, exit_code, err)
    assert len(lines) == 1, (args, err)
    assert lines[0].startswith("eaglegraph: error: "), (args, err)
    assert names in lines[0], (args, names, lines[0])
    assert "Traceback" not in err and out == "", (args, out)
    return lines[0]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("bad")
    (root / "empty.txt").write_bytes(b"")
    (root / "binary.bin").write_bytes(random.Random(0).randbytes(16384))
    (root / "bad.json").write_text("{not json")
    (root / "list.json").write_text("[1, 2]")
    (root / "foreign.json").write_text('{"schema": "someone.else/1"}')
    (root / "exists.txt").write_text("keep me")
    (root / "emptydir").mkdir()
    (root / "badconfig").mkdir()
    (root / "badconfig" / "config.json").write_text("{")
    (root / "wrongtype").mkdir()
    (root / "wrongtype" / "config.json").write_text('{"hidden_size": "large"}')
    (root / "loop").symlink_to(root / "loop")
    return {p.name: p for p in root.iterdir()} | {"root": root}


# -- model inputs: every command that takes MODEL_DIR ------------------------------------------

MODEL_CASES: dict[str, Callable[[dict[str, Path]], tuple[str, str]]] = {
    "missing": lambda d: (str(d["root"] / "absent"), "absent"),
    "empty dir": lambda d: (str(d["emptydir"]), "emptydir"),
    "file not dir": lambda d: (str(d["empty.txt"]), "empty.txt"),
    "malformed config": lambda d: (str(d["badconfig"]), "config.json"),
    "path through a file": lambda d: (str(d["exists.txt"] / "model"), "exists.txt"),
    "unknown preset": lambda d: ("no-such-preset", "no-such-preset"),
}


@pytest.mark.parametrize("command", PAIR_COMMANDS)
@pytest.mark.parametrize("case", sorted(MODEL_CASES))
def test_bad_model_dir(command: str, case: str, inputs: dict[str, Path]) -> None:
    path, names = MODEL_CASES[case](inputs)
    refused([command, path], names)


@pytest.mark.parametrize("command", PAIR_COMMANDS)
def test_missing_target_option(command: str, inputs: dict[str, Path]) -> None:
    missing = str(inputs["root"] / "nowhere")
    args = [command, "--target", missing] if command != "probe" else [command, missing]
    refused(args, "nowhere")


# -- numbers and choices ----------------------------------------------------------------------

NUMBER_CASES = [
    (["--max-num-seqs", "0"], "max_num_seqs"),
    (["--max-num-seqs", "-3"], "max_num_seqs"),
    (["-K", "0"], "num_speculative_tokens"),
    (["-K", "-1"], "num_speculative_tokens"),
    (["--max-num-seqs", "many"], "--max-num-seqs"),
    (["--capture-sizes", "a,b"], "--capture-sizes"),
    (["--capture-sizes", "0,-1"], "capture sizes"),
    (["--capture-sizes", ""], "--capture-sizes is empty"),
    (["--capture-sizes", "4,,8"], "empty entry"),
    (["--capture-sizes", "4,8,"], "empty entry"),
    (["--speculative-config", "{bad"], "--speculative-config"),
    (["--speculative-config", "[]"], "--speculative-config"),
    (["--compilation-config", '{"cudagraph_mode": 5}'], "5"),
    (["--behavior", "nope"], "nope"),
    (["--engine", "garbage"], "garbage"),
    (["--engine", "vllm==0.24.0", "--behavior", "vllm-current"], "--engine"),
    (["--framework", "trtllm"], "--framework"),
    (["--attention-backend", "xformers"], "--attention-backend"),
    (["--no-such-option"], "--no-such-option"),
]


@pytest.mark.parametrize("command", PAIR_COMMANDS)
@pytest.mark.parametrize(("extra", "names"), NUMBER_CASES, ids=lambda v: str(v))
def test_bad_plan_option(command: str, extra: list[str], names: str) -> None:
    refused([command, PRESET, *extra], names)


@pytest.mark.parametrize("command", PAIR_COMMANDS)
def test_bad_mode(command: str) -> None:
    refused([command, PRESET, "--mode", "bogus"], "bogus")


@pytest.mark.parametrize("command", RIG_COMMANDS)
@pytest.mark.parametrize(
    ("extra", "names"),
    [
        (["--dtype", "int3"], "--dtype"),
        (["--device", "tpu"], "--device"),
        (["--seed", "x"], "--seed"),
        (["--pool", "everywhere"], "--pool"),
    ],
    ids=lambda v: str(v),
)
def test_bad_rig_option(command: str, extra: list[str], names: str) -> None:
    refused([command, PRESET, *extra], names)


@pytest.mark.parametrize("value", ["0", "-1", "nan", "soon", "inf", "1e308"])
@pytest.mark.parametrize("command", ["probe", "memdiff"])
def test_timeout_must_be_positive(command: str, value: str) -> None:
    refused([command, PRESET, "--timeout", value], "--timeout")


@pytest.mark.parametrize("value", ["a", "0", "1,,x", "1,,3", "1,", ""])
def test_probe_batches(value: str) -> None:
    refused(["probe", PRESET, "--batches", value], "--batches")


@pytest.mark.parametrize("option", [["--timeout", "5"], ["--workers", "2"]], ids=str)
def test_probe_worker_options_without_isolation_warn(option: list[str]) -> None:
    # the config-only pair is refused right after the warning, so no case runs
    code, _ = warned(["probe", CONFIG_ONLY, "--no-isolation", *option], option[0], "no effect")
    assert code == 2


# -- input that cannot be built: refused before any worker, never a "crash" finding -----------


@pytest.mark.parametrize("command", RIG_COMMANDS)
def test_config_only_pair_needs_random_weights(command: str) -> None:
    line = refused([command, CONFIG_ONLY], "--random-weights")
    assert "no weights" in line


# -- output paths: checked before the work ----------------------------------------------------

OUTPUT_CASES: dict[str, Callable[[dict[str, Path]], tuple[list[str], str]]] = {
    "missing folder": lambda d: (["--save", str(d["root"] / "no" / "x.json")], "does not exist"),
    "through a file": lambda d: (["--save", str(d["exists.txt"] / "x.json")], "not a folder"),
    "existing file": lambda d: (["--save", str(d["exists.txt"])], "already exists"),
    "a folder": lambda d: (["--save", str(d["emptydir"])], "directory"),
    # --force must never swap a device node for a file (as root, /dev/null would go)
    "a device": lambda d: (["--save", "/dev/null", "--force"], "character device"),
    # '-' would become a file named '-' in the working folder; '' was silently no file at all
    "a dash": lambda d: (["--save", "-"], "not a file path"),
    "empty": lambda d: (["--save", ""], "not a file path"),
    "symlink loop": lambda d: (["--save", str(d["loop"])], "symlink loop"),
}
SAVE_COMMANDS = ("capture", "probe", "memdiff")


@pytest.mark.parametrize("command", SAVE_COMMANDS)
@pytest.mark.parametrize("case", sorted(OUTPUT_CASES))
def test_bad_output_path(command: str, case: str, inputs: dict[str, Path]) -> None:
    extra, names = OUTPUT_CASES[case](inputs)
    refused([command, PRESET, *extra], names)
    assert inputs["exists.txt"].read_text() == "keep me"


@pytest.mark.parametrize(
    ("command", "options"),
    [
        ("capture", ("--save", "--trace")),
        ("capture", ("--html", "--snapshot")),
        ("memdiff", ("--save", "--html")),
    ],
)
def test_two_outputs_one_file(
    command: str, options: tuple[str, str], inputs: dict[str, Path]
) -> None:
    same = str(inputs["root"] / "same.json")
    line = refused([command, PRESET, options[0], same, options[1], same], "both name")
    assert options[0] in line and options[1] in line
    assert not Path(same).exists()


# -- report: run files ------------------------------------------------------------------------

REPORT_CASES = {
    "missing": ("absent.json", "absent.json"),
    "empty": ("empty.txt", "empty.txt"),
    "binary": ("binary.bin", "binary.bin"),
    "malformed": ("bad.json", "bad.json"),
    "not an object": ("list.json", "list.json"),
    "foreign schema": ("foreign.json", "someone.else/1"),
    "a folder": ("emptydir", "emptydir"),
}


@pytest.mark.parametrize("case", sorted(REPORT_CASES))
def test_bad_run_file(case: str, inputs: dict[str, Path]) -> None:
    name, names = REPORT_CASES[case]
    refused(["report", str(inputs["root"] / name)], names)


def test_report_output_is_the_input(inputs: dict[str, Path]) -> None:
    run_file = str(inputs["foreign.json"])
    refused(["report", run_file, "--html", run_file, "--force"], "input")


@pytest.mark.parametrize("option", ["--html", "--trace"])
def test_report_output_dash(option: str, inputs: dict[str, Path]) -> None:
    refused(["report", str(inputs["foreign.json"]), option, "-"], option)


def test_explore_html_checked_like_every_output(inputs: dict[str, Path]) -> None:
    refused(["explore", PRESET, "--html", str(inputs["emptydir"])], "directory")
    refused(["explore", PRESET, "--html", str(inputs["root"] / "no" / "x.html")], "does not exist")


# -- triage: logs -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "names", "why"),
    [
        ("absent.log", "absent.log", "does not exist"),
        ("emptydir", "emptydir", "directory"),
        ("empty.txt", "empty.txt", "is empty"),
        ("binary.bin", "binary.bin", "not a text log"),
    ],
)
def test_bad_log(name: str, names: str, why: str, inputs: dict[str, Path]) -> None:
    line = refused(["triage", str(inputs["root"] / name)], names)
    assert why in line


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_endless_log_ends() -> None:
    line = refused(["triage", "/dev/zero"], "/dev/zero")
    assert "NUL" in line


def test_empty_and_binary_stdin() -> None:
    refused(["triage", "-"], "standard input is empty", stdin=b"")
    refused(["triage", "-"], "not a text log", stdin=random.Random(1).randbytes(4096))


# -- stacks, scaffold -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pid", "names"), [("abc", "abc"), ("0", "0"), ("99999999999", "99999999999")]
)
def test_bad_pid(pid: str, names: str) -> None:
    refused(["stacks", pid], names)


def test_stacks_no_such_process() -> None:
    pid = 2**22 + 7  # above the default pid_max, so never a live process
    refused(["stacks", str(pid)], str(pid))


@pytest.mark.parametrize("timeout", ["0", "-5", "1000", "nan", "inf"])
def test_stacks_timeout_range(timeout: str) -> None:
    refused(["stacks", "1", "--timeout", timeout], "--timeout")


def test_scaffold_bad_inputs(inputs: dict[str, Path]) -> None:
    refused(["scaffold", str(inputs["root"] / "new"), "--preset", "nope"], "nope")
    refused(["scaffold", str(inputs["exists.txt"]), "--preset", PRESET], "exists.txt")
    refused(["scaffold", str(inputs["root"] / "new")], "--preset")
    # --list with a scaffold's arguments: neither silently dropped
    refused(["scaffold", str(inputs["root"] / "new"), "--preset", PRESET, "--list"], "--list")
    assert not (inputs["root"] / "new").exists()


# -- --json: a failed command prints an error document on stdout ------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["inspect", "/no/such/model", "--json"],
        ["--json", "inspect", "/no/such/model"],
        ["probe", PRESET, "--timeout", "0", "--json"],
        ["report", "/no/such/run.json", "--json"],
    ],
    ids=str,
)
def test_json_error_document(args: list[str]) -> None:
    code, out, err = run(*args)
    doc = json.loads(out)
    assert code == 2 and doc["schema"] == ERROR_SCHEMA and doc["exit_code"] == 2
    assert doc["error"] and doc["error"] in err


# -- files written: umask respected, one `wrote PATH` line each ------------------------------


def test_written_files_follow_umask_and_are_named(tmp_path: Path) -> None:
    from eaglegraph.cli.outputs import Writes
    from eaglegraph.serial import atomic_write

    old = os.umask(0o022)
    try:
        path = tmp_path / "out.json"
        writes = Writes()
        writes.write("--save", path, lambda: atomic_write(path, "{}\n"))
        assert stat.S_IMODE(path.stat().st_mode) == 0o644
        failing = tmp_path / "gone" / "x.json"
        writes.write("--html", failing, lambda: atomic_write(failing, "x"))
        assert len(writes.failures) == 1 and "gone" in writes.failures[0]
    finally:
        os.umask(old)


# -- numbers that were silently replaced ------------------------------------------------------


@pytest.mark.parametrize("command", PAIR_COMMANDS)
@pytest.mark.parametrize("value", ["0", "-8"])
def test_zero_token_budget_is_refused(command: str, value: str) -> None:
    refused([command, PRESET, "--max-num-batched-tokens", value], "max_num_batched_tokens")


# -- suspicious but legal: a warning that names the value and why -----------------------------

WARNING_CASES = [
    (["--max-num-batched-tokens", "8"], "--max-num-batched-tokens 8", "not"),
    (["--max-num-seqs", "64", "--max-num-batched-tokens", "32"], "--max-num-seqs 64", "refuses"),
    (["-K", "24"], "K=24", "accepted"),
    (["--max-num-seqs", "6000"], "--max-num-seqs 6000", "far above"),
    (["--capture-sizes", "4,8,4096", "--max-num-batched-tokens", "512"], "4096", "dropped"),
    # pasted vLLM JSON: keys the plan does not read are named, not silently dropped
    (["--speculative-config", '{"model": "x/y", "method": "eagle3"}'], "model", "ignored"),
    (["--compilation-config", '{"level": 3}'], "level", "ignored"),
]


def warned(args: list[str], names: str, why: str) -> tuple[int, str]:
    code, out, err = run(*args)
    warnings = [line for line in err.splitlines() if line.startswith("eaglegraph: warning: ")]
    assert any(names in w and why in w for w in warnings), (args, err)
    assert "Traceback" not in err
    return code, out


@pytest.mark.parametrize(("extra", "names", "why"), WARNING_CASES, ids=lambda v: str(v))
def test_inspect_warns_and_still_answers(extra: list[str], names: str, why: str) -> None:
    code, out = warned(["inspect", PRESET, *extra, "--json"], names, why)
    assert code == 0 and json.loads(out)["schema"] == "eaglegraph.inspect/1"


# what the engine refuses at startup: a warning from inspect, a refusal from the rig commands
REFUSED_AT_STARTUP = WARNING_CASES[1]


@pytest.mark.parametrize("command", RIG_COMMANDS)
def test_rig_commands_refuse_what_the_engine_refuses(command: str) -> None:
    extra, names, _ = REFUSED_AT_STARTUP
    line = refused([command, PRESET, *extra], names)
    assert "the engine's limit: vLLM refuses this at startup" in line and "--force" in line


@pytest.mark.parametrize("command", RIG_COMMANDS)
@pytest.mark.parametrize(
    ("extra", "names", "why"),
    [c for c in WARNING_CASES[:3] if c != REFUSED_AT_STARTUP],
    ids=lambda v: str(v),
)
def test_rig_commands_warn_before_work(
    command: str, extra: list[str], names: str, why: str
) -> None:
    # the config-only pair without --random-weights is refused right after the warnings,
    # so the warning is seen without running the work
    code, _ = warned([command, CONFIG_ONLY, *extra], names, why)
    assert code == 2


@pytest.fixture(scope="module")
def odd_configs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The tiny preset with one config number changed (JSON allows NaN and Infinity)."""
    from eaglegraph.pair.presets import materialize

    source = materialize(PRESET)
    out = {}
    for name, key, value in [
        ("nan-theta", "rope_theta", "NaN"),
        ("inf-theta", "rope_theta", "Infinity"),
        ("neg-theta", "rope_theta", "-5"),
        ("inf-eps", "rms_norm_eps", "Infinity"),
        ("tiny-theta", "rope_theta", "0.001"),
        ("zero-eps", "rms_norm_eps", "0"),
    ]:
        folder = tmp_path_factory.mktemp(name)
        for side in ("target", "draft"):
            (folder / side).mkdir()
            for f in (source / side).iterdir():
                (folder / side / f.name).symlink_to(f)
        cfg = folder / "target" / "config.json"
        data = json.loads(cfg.read_text())
        cfg.unlink()
        data[key] = "@@"
        cfg.write_text(json.dumps(data).replace('"@@"', value))
        out[name] = folder
    return out


@pytest.mark.parametrize("command", PAIR_COMMANDS)
@pytest.mark.parametrize("case", ["nan-theta", "inf-theta", "neg-theta", "inf-eps"])
def test_non_finite_or_negative_config_numbers_refused(
    command: str, case: str, odd_configs: dict[str, Path]
) -> None:
    line = refused([command, str(odd_configs[case])], "config.json")
    assert "rope_theta" in line or "rms_norm_eps" in line


@pytest.mark.parametrize(
    ("case", "names"), [("tiny-theta", "rope_theta 0.001"), ("zero-eps", "rms_norm_eps 0")]
)
def test_absurd_config_numbers_warn(case: str, names: str, odd_configs: dict[str, Path]) -> None:
    code, _ = warned(["inspect", str(odd_configs[case])], names, "target config")
    assert code == 0


# -- files that are not what they claim: one line with the path and the real reason -----------


@pytest.fixture(scope="module")
def broken_pairs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The tiny preset with its draft weights replaced by something unreadable."""
    from eaglegraph.pair.presets import materialize

    source = materialize(PRESET)
    weights = (source / "draft" / "model.safetensors").read_bytes()
    makers: dict[str, Callable[[Path], None]] = {
        "a folder": lambda p: p.mkdir(),
        "a fifo": lambda p: os.mkfifo(p),
        "3 bytes": lambda p: p.write_bytes(weights[:3]),
        "cut header": lambda p: p.write_bytes(weights[:100]),
        "unreadable": lambda p: (p.write_bytes(weights), p.chmod(0)),
    }
    out = {}
    for name, make in makers.items():
        folder = tmp_path_factory.mktemp(name.replace(" ", "-"))
        for side in ("target", "draft"):
            (folder / side).mkdir()
            (folder / side / "config.json").symlink_to(source / side / "config.json")
        (folder / "target" / "model.safetensors").symlink_to(
            source / "target" / "model.safetensors"
        )
        make(folder / "draft" / "model.safetensors")
        out[name] = folder
    return out


BROKEN = {
    "a folder": "is a directory",
    "a fifo": "not a regular file (a named pipe)",
    "3 bytes": "truncated safetensors file",
    "cut header": "truncated safetensors header",
    "unreadable": "Permission denied",
}


@pytest.mark.parametrize("command", PAIR_COMMANDS)
@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_weights_say_why(command: str, case: str, broken_pairs: dict[str, Path]) -> None:
    if case == "unreadable" and os.geteuid() == 0:
        pytest.skip("root reads files whatever their mode")
    line = refused([command, str(broken_pairs[case])], "model.safetensors")
    assert BROKEN[case] in line
    assert "No such file" not in line


SPECIAL_FILES = ["/dev/zero", "/dev/null"]


@pytest.mark.parametrize("path", SPECIAL_FILES)
def test_report_refuses_devices(path: str) -> None:
    if not Path(path).exists():
        pytest.skip(f"no {path}")
    refused(["report", path], path)


def test_report_refuses_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "run.json"
    os.mkfifo(fifo)
    line = refused(["report", str(fifo)], "run.json")
    assert "named pipe" in line


@pytest.mark.parametrize("command", PAIR_COMMANDS)
def test_config_fifo_does_not_hang(command: str, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "config.json")
    line = refused([command, str(tmp_path)], "config.json")
    assert "named pipe" in line


# -- memory: refused with both numbers before anything is allocated ---------------------------


@pytest.mark.parametrize("command", RIG_COMMANDS)
def test_pair_larger_than_memory_is_refused(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from eaglegraph.probes import host_memory

    monkeypatch.setattr(host_memory, "available_host_bytes", lambda: 4 * 2**30)
    line = refused([command, CONFIG_ONLY, "--random-weights", "--device", "cpu"], "GiB", code=3)
    need = re.search(r"needs about (\d+\.\d) GiB", line)
    assert "4.0 GiB available" in line and need and float(need.group(1)) > 30  # 8B in fp32
    assert "--dtype bfloat16" not in line  # 17 GiB does not fit 4 either


def test_memory_refusal_offers_what_fits(monkeypatch: pytest.MonkeyPatch) -> None:
    from eaglegraph.probes import host_memory

    monkeypatch.setattr(host_memory, "available_host_bytes", lambda: 20 * 2**30)
    line = refused(
        ["capture", CONFIG_ONLY, "--random-weights", "--device", "cpu"], "20.0 GiB", code=3
    )
    assert "--dtype bfloat16 needs" in line and "fits" in line


# -- help says the defaults the commands really use --------------------------------------------


def _help(command: str) -> str:
    result = CliRunner().invoke(cli, [command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    return " ".join(result.output.split())


def test_inspect_help_points_at_the_engine_defaults_it_uses() -> None:
    text = _help("inspect")
    assert "Default 128" not in text and "engine release" in text
    code, out, _ = run("inspect", PRESET, "--json")
    plan = json.loads(out)["plan"]
    shown = json.dumps(plan)
    assert code == 0 and f"max_num_seqs {plan['max_num_seqs']}" in shown


@pytest.mark.parametrize("command", ["capture", "probe", "memdiff"])
def test_help_states_the_real_defaults(command: str) -> None:
    from eaglegraph.probes.spec import resolve_run
    from eaglegraph.rig.options import CPU_CAPTURE_MAX_NUM_SEQS, PROBE_MAX_NUM_SEQS

    text = _help(command)
    seqs = {"probe": PROBE_MAX_NUM_SEQS}.get(command)
    cpu = CPU_CAPTURE_MAX_NUM_SEQS if command == "capture" else None
    for framework in ("vllm", "sglang"):
        spec = resolve_run(
            PRESET, plan={"framework": framework}, device="cpu", default_max_num_seqs=seqs
        )
        shown = spec.options.max_num_seqs
        label = "Default" if framework == "vllm" else "SGLang"
        assert f"{label} {shown}" in text, (command, framework, shown)
        if cpu is not None:
            quick = resolve_run(
                PRESET, plan={"framework": framework}, device="cpu", cpu_max_num_seqs=cpu
            )
            assert quick.full_max_num_seqs == shown
            assert f"on CPU {CPU_CAPTURE_MAX_NUM_SEQS['vllm']}" in text
            assert quick.options.max_num_seqs == cpu[framework]
        assert f"Default {spec.options.max_num_batched_tokens}" in text
    assert "Defaults to 4" not in text
    if command in ("capture", "memdiff"):
        assert "--html" in text and "--trace" in text


def test_quick_cpu_plan_only_replaces_defaults() -> None:
    from eaglegraph.probes.spec import resolve_run
    from eaglegraph.rig.options import CPU_CAPTURE_MAX_NUM_SEQS as CPU

    assert resolve_run(PRESET, device="cpu", cpu_max_num_seqs=CPU).full_max_num_seqs == 128
    for plan in ({"max_num_seqs": 16}, {"capture_sizes": (4, 8)}):
        spec = resolve_run(PRESET, plan=plan, device="cpu", cpu_max_num_seqs=CPU)
        assert spec.full_max_num_seqs is None
    explicit = resolve_run(PRESET, plan={"max_num_seqs": 16}, device="cpu", cpu_max_num_seqs=CPU)
    assert explicit.options.max_num_seqs == 16


# -- sizes a worker would refuse once built: refused in the parent, never a crash finding -----


@pytest.mark.parametrize("command", RIG_COMMANDS)
@pytest.mark.parametrize(
    ("extra", "names"),
    [
        (["--max-model-len", "100000"], "max_position_embeddings"),
        (["--max-model-len", "8"], "--max-model-len"),
        (["--max-num-batched-tokens", "5000000"], "too large"),
    ],
    ids=str,
)
def test_rig_limits_refused_before_workers(command: str, extra: list[str], names: str) -> None:
    code, out, err = run(command, PRESET, "--device", "cpu", *extra)
    errors = [line for line in err.splitlines() if line.startswith("eaglegraph: error: ")]
    assert code == 2 and len(errors) == 1 and names in errors[0], err
    assert "crash" not in out and "Traceback" not in err


def test_memdiff_same_pools_is_bad_input_before_cuda() -> None:
    refused(["memdiff", PRESET, "--pool", "shared", "--against", "shared"], "--against")


@pytest.mark.parametrize("command", RIG_COMMANDS)
@pytest.mark.parametrize(
    ("extra", "names"),
    [
        (["--seed", "-1"], "--seed"),
        (["--seed", str(2**70)], "--seed"),
        (["--max-num-seqs", "100000000"], "--max-num-seqs 100000000"),
    ],
    ids=str,
)
def test_rig_numbers_out_of_range(command: str, extra: list[str], names: str) -> None:
    code, _, err = run(command, PRESET, "--device", "cpu", *extra)
    errors = [line for line in err.splitlines() if line.startswith("eaglegraph: error: ")]
    assert code == 2 and len(errors) == 1 and names in errors[0], err


@pytest.mark.parametrize("option", ["--html", "--trace"])
def test_report_never_writes_over_a_device(option: str) -> None:
    run_file = str(
        Path(__file__).parents[1] / "fixtures" / "runs" / "probe-flashinfer-pre39773.json"
    )
    refused(["report", run_file, option, "/dev/full", "--force"], "character device")
    assert Path("/dev/full").is_char_device()
