"""Run DP scenarios and seeded explorations, and compare the ranks' choices step by step.

`run_scenario` replays a named scenario (`known.dp_scenarios`) under a profile; `explore` draws
seeded random per-rank batch mixes (idle, decode, mixed, prefill, requests near
`max_model_len`, draft inputs without a seed) beyond the named ones. Both run every rank in one
process (`rig.dp_agreement.simulate`); `compare_ranks` is the check, shared with multi-process
runs that gather each rank's `RankStep`. Invariants: the ranks issue the same DP collectives;
every rank runs every phase any rank runs; where a phase's collectives pair by shape, all ranks
replay the same graph at the same padded count or all run eager; the same draft-step count.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from eaglegraph.known.dp_batch import IDLE, DpSetup, RankBatch
from eaglegraph.known.dp_rules import CONSEQUENCES, DpRule, dp_rule
from eaglegraph.known.dp_scenarios import DpScenario
from eaglegraph.known.hazards import HAZARDS, Hazard
from eaglegraph.known.profiles import Profile, get_profile
from eaglegraph.known.runners import ModelRunner
from eaglegraph.results.dp import DpRun, DpStep, PhaseChoice, RankStep
from eaglegraph.results.findings import Finding, Severity
from eaglegraph.rig.dp_agreement import simulate


def _who(ranks: Sequence[int]) -> str:
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    return "ranks " + ", ".join(map(str, ranks[:-1])) + f" and {ranks[-1]}"


def _groups(ranks: Sequence[RankStep], text: dict[int, str]) -> list[tuple[list[int], str]]:
    """Ranks grouped by what they do, in order of their first rank."""
    out: dict[str, list[int]] = {}
    for r in ranks:
        out.setdefault(text[r.rank], []).append(r.rank)
    return [(members, what) for what, members in out.items()]


def _finding(
    step: int, where: str, kind: str, body: str, ranks: Sequence[RankStep], hazard: Hazard | None
) -> Finding:
    refs = [r for r in (hazard.fixed_by, *hazard.refs[:1]) if r] if hazard else []
    ref = f" ({', '.join(refs)})" if refs else ""
    return Finding(
        id=f"dp.{kind}",
        severity=Severity.ERROR,
        message=f"step {step} {where}: {body} — {CONSEQUENCES[kind]}{ref}",
        ref=hazard.ref_text if hazard else None,
        kind="dp-divergence",
        phase=where,
        batch="; ".join(f"rank {r.rank}: {r.batch}" for r in ranks),
        evidence="; ".join(
            f"rank {r.rank}: " + ", ".join(f"{s.tag} {list(s.row)}" for s in r.syncs) for r in ranks
        ),
        fix=hazard.fix_text if hazard else None,
        hazard=hazard.id if hazard else None,
    )


def _collectives(step: int, ranks: Sequence[RankStep], hazard: Hazard | None) -> Finding | None:
    tags = [tuple(s.tag for s in r.syncs) for r in ranks]
    if len(set(tags)) == 1:
        return None
    i = next(i for i in range(max(map(len, tags))) if len({t[i : i + 1] for t in tags}) > 1)
    text = {}
    for r, t in zip(ranks, tags, strict=True):
        text[r.rank] = f"enters {t[i]} sync" if i < len(t) else "has no such sync"
    parts = []
    for members, what in _groups(ranks, text):
        verb = what.replace("enters", "enter").replace("has", "have") if len(members) > 1 else what
        parts.append(f"{_who(members)} {verb}")
    counts = ", ".join(f"rank {r.rank} {len(t)}" for r, t in zip(ranks, tags, strict=True))
    body = ", ".join(parts) + f" (DP syncs this step: {counts})"
    return _finding(step, f"DP sync #{i + 1}", "collectives", body, ranks, hazard)


def _phase_labels(ranks: Sequence[RankStep]) -> list[str]:
    seen: dict[str, None] = {}
    for r in ranks:
        for p in r.phases:
            seen.setdefault(p.label, None)
    return list(seen)


def _phases(step: int, ranks: Sequence[RankStep], hazard: Hazard | None) -> Finding | None:
    """The first phase where the ranks part: one does not run it, or (where its collectives pair
    by shape) they replay different graphs or mix graphs and eager."""
    for label in _phase_labels(ranks):
        choice: dict[int, PhaseChoice | None] = {r.rank: r.phase(label) for r in ranks}
        present = [c for c in choice.values() if c is not None]
        text = {rank: c.describe() if c else "does not run it" for rank, c in choice.items()}
        agree = (
            not any(c.bound for c in present)
            or all(c.eager for c in present)
            or len({(c.key, c.padded) for c in present}) == 1
        )
        if len(present) < len(ranks):
            kind = "absent"
        elif agree:
            continue
        else:
            kind = "graph-vs-eager" if any(c.eager for c in present) else "graph-key"
        parts = []
        for members, _ in _groups(ranks, text):
            c = choice[members[0]]
            what = (
                c.describe(plural=len(members) > 1)
                if c
                else ("do not run it" if len(members) > 1 else "does not run it")
            )
            parts.append(f"{_who(members)} {what}")
        return _finding(step, label, kind, ", ".join(parts), ranks, hazard)
    return None


def compare_ranks(
    step: int, ranks: Sequence[RankStep], hazard: Hazard | None = None
) -> tuple[Finding, ...]:
    """The findings of one step: where the ranks' DP collectives part, the first phase where
    their choices part, and (when neither) a differing draft-step count. `hazard` names the
    known mechanism when the caller knows it (a scenario does)."""
    found = [f for f in (_collectives(step, ranks, hazard), _phases(step, ranks, hazard)) if f]
    if not found and len({r.draft_steps for r in ranks}) > 1:
        text = {r.rank: f"drafts {r.draft_steps} steps" for r in ranks}
        body = ", ".join(f"{_who(m)}: {what}" for m, what in _groups(ranks, text))
        found.append(_finding(step, "draft", "draft-steps", body, ranks, hazard))
    return tuple(found)


StepRunner = Callable[
    [Sequence[RankBatch], Profile, DpSetup, ModelRunner | None], tuple[RankStep, ...]
]
"""Every rank's `RankStep` for one step's batches: `simulate` (all ranks in this process), or
a rank process's `rank_step` over a real all_gather, its peers' steps gathered after it."""


def _run(
    steps: Sequence[Sequence[RankBatch]],
    profile: Profile,
    rule: DpRule,
    setup: DpSetup,
    runner: ModelRunner | None,
    hazard: Hazard | None,
    step_runner: StepRunner = simulate,
) -> tuple[DpStep, ...]:
    out = []
    for i, batches in enumerate(steps):
        ranks = step_runner(batches, profile, setup, runner)
        out.append(DpStep(i, ranks, compare_ranks(i, ranks, hazard)))
    return tuple(out)


def _dp_run(profile: Profile, rule: DpRule, steps: tuple[DpStep, ...], **extra: object) -> DpRun:
    return DpRun(
        engine=rule.spec.engine,
        profile=profile.name,
        rule=str(rule.kind),
        rule_source=rule.spec.source,
        rows=rule.spec.rows,
        runner=str(rule.runner) if rule.runner else None,
        dp_size=len(steps[0].ranks) if steps else 0,
        steps=steps,
        hazards=rule.hazards,
        **extra,  # type: ignore[arg-type]
    )


def run_scenario(
    scenario: DpScenario,
    profile: str | Profile | None = None,
    step_runner: StepRunner = simulate,
) -> DpRun:
    """Replay `scenario` under `profile` (a name or a Profile; default: the engine's newest)
    and compare the ranks' choices at every step (`step_runner`: where the ranks run)."""
    prof = profile if isinstance(profile, Profile) else get_profile(profile, scenario.engine)
    if prof.engine != scenario.engine:
        raise ValueError(f"{scenario.name} is a {scenario.engine} scenario, not {prof.engine}")
    rule = dp_rule(prof, scenario.runner)
    steps = _run(
        scenario.steps, prof, rule, scenario.setup, scenario.runner, HAZARDS[scenario.hazard],
        step_runner,
    )  # fmt: skip
    return _dp_run(
        prof,
        rule,
        steps,
        scenario=scenario.name,
        summary=scenario.summary,
        refs=tuple(filter(None, (HAZARDS[scenario.hazard].ref_text,))),
        expect=scenario.expect(prof.name),
    )


def random_batch(rng: random.Random, max_reqs: int = 12, max_prefill: int = 600) -> RankBatch:
    """One rank's batch drawn from the mix the engines see: idle, decode, prefill, mixed;
    sometimes with requests near max_model_len or a draft input without its seed."""
    draw = rng.random()
    if draw < 0.25:
        return IDLE
    decode_reqs = rng.randint(1, max_reqs) if draw < 0.85 else 0
    prefill_reqs = 0
    prefill_tokens = 0
    if draw >= 0.6:
        prefill_reqs = rng.randint(1, 3)
        prefill_tokens = rng.randint(prefill_reqs, max_prefill)
    reqs = decode_reqs + prefill_reqs
    near_cap = rng.randint(1, reqs) if rng.random() < 0.15 else 0
    return RankBatch(
        decode_reqs=decode_reqs,
        prefill_reqs=prefill_reqs,
        prefill_tokens=prefill_tokens,
        near_cap_reqs=near_cap,
        dsa_seed=rng.random() >= 0.15,
        seq_len=rng.randint(1, 4096),
    )


def random_schedule(seed: int, dp_size: int, steps: int) -> tuple[tuple[RankBatch, ...], ...]:
    """`steps` steps of per-rank batches, reproducible from `seed`."""
    rng = random.Random(seed)
    return tuple(tuple(random_batch(rng) for _ in range(dp_size)) for _ in range(steps))


def explore(
    profile: str | Profile,
    seed: int,
    *,
    dp_size: int = 2,
    steps: int = 4,
    setup: DpSetup | None = None,
    runner: ModelRunner | None = None,
    engine: str = "vllm",
    step_runner: StepRunner = simulate,
) -> DpRun:
    """A seeded random schedule under `profile`: the same agreement and checks as a scenario.
    Findings name a hazard when the profile lacks exactly one fix its rule can show."""
    prof = profile if isinstance(profile, Profile) else get_profile(profile, engine)
    setup = setup or DpSetup()
    rule = dp_rule(prof, runner)
    hazard = HAZARDS[rule.hazards[0]] if len(rule.hazards) == 1 else None
    schedule = random_schedule(seed, dp_size, steps)
    result = _run(schedule, prof, rule, setup, runner, hazard, step_runner)
    return _dp_run(prof, rule, result, seed=seed, summary=f"random per-rank batches, seed {seed}")
