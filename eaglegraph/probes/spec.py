"""RunSpec: one run's inputs, resolved once and handed down as plain, serialisable data.

The CLI (or a library caller) resolves the model argument, the plan options — including the
draft config's own K — the device and the rig settings exactly once. Everything below (probe
planning, worker processes, memdiff captures) reads the spec; nothing re-parses flags or
re-resolves options, so the parent and its workers can never disagree about K or the device.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eaglegraph.errors import BadInput
from eaglegraph.known.compilation import engine_compiles_target
from eaglegraph.known.pool_policies import PoolPolicy
from eaglegraph.known.profiles import get_profile
from eaglegraph.pair import Pair, load_pair
from eaglegraph.pair.presets import resolve_model_arg
from eaglegraph.probes.setup import as_choices, plan_options, resolve_device
from eaglegraph.results.parallel import SINGLE_RANK, ParallelLayout
from eaglegraph.rig.config import RigConfig
from eaglegraph.rig.gpus import GpuSpec, get_gpu
from eaglegraph.rig.modes import Mode
from eaglegraph.rig.options import PlanChoices, PlanOptions
from eaglegraph.rig.options import with_mode as options_with_mode

POOLS = tuple(PoolPolicy.values())
MAX_SEED = 2**63 - 1  # torch generators take 64-bit seeds; the draft uses seed + 1


@dataclass(frozen=True)
class RunSpec:
    """Everything a worker needs to rebuild the same rig; JSON round-trips exactly."""

    model: str
    path: str | None
    target: str | None
    draft: str | None
    options: PlanOptions
    device: str
    dtype: str = "auto"
    max_model_len: int = 1024
    random_weights: bool = False
    seed: int = 0
    pool: str | None = None
    # the target through torch.compile/Inductor; resolved by `spec_for_pair` (None there:
    # as the engine does by default, on CUDA only)
    compile_model: bool | None = None
    # set when a quick CPU plan replaced the default --max-num-seqs: the value it replaced
    full_max_num_seqs: int | None = None
    # the deployment's parallel layout and the global rank this spec rebuilds (the rank
    # runtime sets `rank` in each rank's process; 0 and a single rank everywhere else)
    layout: ParallelLayout = SINGLE_RANK
    rank: int = 0

    @property
    def backend(self) -> str:
        return "cuda" if self.device == "cuda" else "emulated"

    @property
    def resolved_pool(self) -> str:
        return self.pool or self.options.behavior.default_pool

    def with_mode(self, mode: Mode | str) -> RunSpec:
        """The same run under another cudagraph mode (probe cases, one per mode)."""
        parsed = mode if isinstance(mode, Mode) else Mode.parse(mode)
        return dataclasses.replace(self, options=options_with_mode(self.options, parsed))

    def with_pool(self, pool: str | None) -> RunSpec:
        return dataclasses.replace(self, pool=pool)

    def open_pair(self) -> Pair:
        """Headers only; the rig loads the weights it needs."""
        return load_pair(self.path, self.target, self.draft)

    def rig_config(self, *, guard: bool = False, num_blocks: int | None = None) -> RigConfig:
        import torch  # here, not at the top: a spec is built (and refused) before torch loads

        device = torch.device(self.device)
        if device.type == "cpu":
            # the rig on CPU runs tiny tensors through Triton's interpreter: one thread avoids
            # OpenMP spin-waits that dominate such small ops
            torch.set_num_threads(1)
        return RigConfig(
            options=self.options,
            device=device,
            dtype=self.dtype,
            max_model_len=self.max_model_len,
            random_weights=self.random_weights,
            seed=self.seed,
            guard=guard,
            num_blocks=num_blocks,
            compile=self.compile_model,
            layout=self.layout,
            rank=self.rank,
        )

    def to_json(self) -> dict[str, Any]:
        """Every field, in order; the options' mode, behavior and GPU by name (`from_json`
        looks them up again)."""
        o = self.options
        options = {f.name: getattr(o, f.name) for f in dataclasses.fields(o)}
        options.update(
            mode=o.mode.name,
            behavior=o.behavior.name,
            capture_sizes=list(o.capture_sizes) if o.capture_sizes is not None else None,
            gpu=o.gpu.to_json(),  # name, capability, memory: a card the user described too
            defaults=list(o.defaults),
        )
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        data["options"] = options
        data["layout"] = dataclasses.asdict(self.layout)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunSpec:
        o = dict(data["options"])
        sizes = o.pop("capture_sizes")
        options = PlanOptions(
            **{k: v for k, v in o.items() if k not in ("mode", "behavior", "gpu", "defaults")},
            mode=Mode[o["mode"]],
            behavior=get_profile(o["behavior"]),
            capture_sizes=tuple(sizes) if sizes is not None else None,
            gpu=_gpu(o.get("gpu")),
            defaults=tuple(o.get("defaults", ())),
        )
        fields = {k: v for k, v in data.items() if k not in ("options", "layout")}
        layout = ParallelLayout(**data["layout"]) if data.get("layout") else SINGLE_RANK
        return cls(options=options, layout=layout, **fields)


def _gpu(saved: Any) -> GpuSpec:
    """The plan's GPU from a saved spec: its record (name, capability, memory), or the bare
    name older runs stored."""
    if isinstance(saved, Mapping):
        major, minor = (int(x) for x in str(saved["capability"]).split("."))
        return get_gpu(str(saved["name"]), float(saved["memory_gib"]), (major, minor))
    return get_gpu(saved)


def spec_for_pair(
    pair: Pair,
    plan: PlanChoices | Mapping[str, Any] | None = None,
    *,
    model: str | None = None,
    device: str = "auto",
    dtype: str = "auto",
    max_model_len: int = 1024,
    random_weights: bool = False,
    seed: int = 0,
    pool: str | None = None,
    default_max_num_seqs: Mapping[str, int] | None = None,
    source: tuple[str | None, str | None, str | None] | None = None,
    compile_model: bool | None = None,
    cpu_max_num_seqs: Mapping[str, int] | None = None,
) -> RunSpec:
    """Resolve a run for a pair already opened (the one place options and device resolve).

    `source` is the (MODEL_DIR, --target, --draft) the pair was opened from, so workers reopen
    it the same way; without it the pair's own folders are used. `cpu_max_num_seqs` is the
    quick plan for the emulated backend: when the run lands on the CPU and neither
    --max-num-seqs nor capture sizes were given, it replaces the default request count (and
    the spec remembers the replaced value, so the result can say what was left out).
    """
    if max_model_len < 16:
        raise BadInput(f"--max-model-len must be at least 16, got {max_model_len}")
    if not 0 <= seed < MAX_SEED:
        raise BadInput(f"--seed must be between 0 and {MAX_SEED - 1}, got {seed}")
    if pool is not None and pool not in POOLS:
        raise BadInput(f"unknown pool policy {pool!r}; choose {', '.join(POOLS)}")
    chosen = as_choices(plan)
    options = plan_options(pair, chosen, runner_facts=True)
    if default_max_num_seqs and chosen.max_num_seqs is None:
        options = dataclasses.replace(options, max_num_seqs=default_max_num_seqs[options.framework])
    resolved_device = resolve_device(device).type
    full_seqs = None
    if (
        cpu_max_num_seqs
        and resolved_device == "cpu"
        and chosen.max_num_seqs is None
        and options.capture_sizes is None
        and options.max_capture_size is None
        and cpu_max_num_seqs[options.framework] < options.max_num_seqs
    ):
        full_seqs = options.max_num_seqs
        options = dataclasses.replace(options, max_num_seqs=cpu_max_num_seqs[options.framework])
    compile_model = resolve_compile(compile_model, resolved_device, options)
    if source is None:
        source = (
            None,
            str(pair.target.path) if pair.target is not None else None,
            str(pair.draft.path) if pair.draft is not None else None,
        )
    return RunSpec(
        model=model if model is not None else str(pair.root),
        path=source[0],
        target=source[1],
        draft=source[2],
        options=options,
        device=resolved_device,
        dtype=dtype,
        max_model_len=max_model_len,
        random_weights=random_weights,
        seed=seed,
        pool=pool,
        compile_model=compile_model,
        full_max_num_seqs=full_seqs,
    )


def resolve_compile(asked: bool | None, device: str, options: PlanOptions) -> bool:
    """`--compile/--no-compile` as given; unsaid, as the engine runs this plan's target (on
    CUDA only: the emulated backend replays through the Triton interpreter, where Inductor's
    fusions change nothing it measures)."""
    if asked is not None:
        return asked
    return device == "cuda" and engine_compiles_target(
        options.framework, options.compiled, options.breakable
    )


def resolve_run(
    model: str | Path | None = None,
    target: str | Path | None = None,
    draft: str | Path | None = None,
    **kwargs: Any,
) -> RunSpec:
    """From a MODEL_DIR (or a preset name) and/or --target/--draft to a spec.

    Keyword arguments are those of `spec_for_pair` (plan, device, dtype, max_model_len,
    random_weights, seed, pool, default_max_num_seqs).
    """
    # absolute, so a worker (or a saved spec) finds the same folders from anywhere
    source = (
        str(resolve_model_arg(model).absolute()) if model is not None else None,
        str(Path(target).expanduser().absolute()) if target is not None else None,
        str(Path(draft).expanduser().absolute()) if draft is not None else None,
    )
    pair = load_pair(*source)
    shown = str(model if model is not None else (target or ""))
    return spec_for_pair(pair, kwargs.pop("plan", None), model=shown, source=source, **kwargs)


def rig_config(
    pair: Pair,
    plan: PlanChoices | Mapping[str, Any] | None = None,
    *,
    guard: bool = False,
    num_blocks: int | None = None,
    **rig: Any,
) -> RigConfig:
    """Resolve a spec for `pair` and its rig config in one go, for library callers and tests
    that hold a pair (device, dtype, max_model_len, random_weights, seed, compile_model as
    keywords). Uncompiled unless `compile_model` says otherwise: a library caller asks for
    Inductor's minute of compilation explicitly."""
    rig.setdefault("compile_model", False)
    spec = spec_for_pair(pair, plan, **rig)
    return spec.rig_config(guard=guard, num_blocks=num_blocks)
