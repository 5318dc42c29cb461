"""`inspect` as a library call: an `InspectRequest` resolved once, then run.

The CLI builds the request from its options; everything the command does — opening the pair,
resolving the plan options with the draft's own K, the headers-only report and the optional
memory prediction recorded on the CPU — happens here, below the CLI, so `explore` inspects a
model folder the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from eaglegraph.pair.model import Pair
from eaglegraph.pair.rank_sizing import check_layout, context_finding, fit_finding, size_ranks
from eaglegraph.probes.setup import plan_options
from eaglegraph.results.inspect import InspectReport
from eaglegraph.results.parallel import SINGLE_RANK, ParallelLayout
from eaglegraph.rig.estimate import GPU_MEMORY_UTILIZATION
from eaglegraph.rig.inspect import inspect_pair, open_pair
from eaglegraph.rig.options import PlanChoices, PlanOptions


@dataclass(frozen=True)
class InspectRequest:
    """What `inspect` was asked: the pair's folders, the plan choices, dtype and whether to
    predict the graph pools (slow: records the capture sequence on the CPU)."""

    model: str | None
    target: str | None = None
    draft: str | None = None
    plan: PlanChoices = field(default_factory=PlanChoices)
    dtype: str = "auto"
    predict_memory: bool = False
    # True: unset batch limits take what the engine release defaults to on --gpu (what a
    # server runs); False: the small defaults capture and probe rebuild the step with (explore)
    engine_defaults: bool = True
    layout: ParallelLayout = SINGLE_RANK  # sized per rank; refused here if the engine would

    def resolve(self) -> Inspection:
        pair = open_pair(self.model, self.target, self.draft)
        if not self.engine_defaults:
            return Inspection(self, pair, plan_options(pair, self.plan))
        target = pair.target
        options = plan_options(
            pair,
            replace(self.plan, tp_size=self.layout.tp),
            engine_batch_defaults=True,
            architecture=target.architecture if target else None,
            head_dim=target.geometry.head_dim if target else None,
            runner_facts=True,
        )
        check_layout(pair, self.layout, options.framework)  # before any work
        return Inspection(self, pair, options)


@dataclass(frozen=True)
class Inspection:
    """A resolved request: the pair opened (headers only) and its plan options."""

    request: InspectRequest
    pair: Pair
    options: PlanOptions

    def warnings(self) -> list[str]:
        """Legal but suspicious values, for the caller to show (stdout stays the result)."""
        from eaglegraph.probes.sanity import plan_warnings

        return plan_warnings(self.pair, self.options)

    def run(self, on_stage: Callable[[str], None] | None = None) -> InspectReport:
        dtype = self.request.dtype
        report = inspect_pair(self.pair, self.options, None if dtype == "auto" else dtype)
        if self.request.predict_memory:
            import torch

            from eaglegraph.probes.memory_predict import apply_prediction, predict_memory
            from eaglegraph.rig.config import RigConfig

            if on_stage is not None:
                on_stage("recording the capture sequence")
            config = RigConfig(self.options, torch.device("cpu"), dtype)
            report.memory_prediction = predict_memory(self.pair, config)
            # one graph-memory answer: the prediction for the plan's own pool policy
            policy = str(self.options.behavior.default_pool)
            apply_prediction(report.memory, report.memory_prediction, policy)
        self._size_ranks(report)
        return report

    def _size_ranks(self, report: InspectReport) -> None:
        """One rank of the layout on the plan's GPU (after any prediction, whose graph
        memory it takes); a layout that leaves no KV cache is a finding."""
        report.ranks = size_ranks(
            self.pair,
            self.request.layout,
            self.options.framework,
            report.memory,
            self.options.gpu,
            self.options.max_num_batched_tokens,
            GPU_MEMORY_UTILIZATION,
        )
        for finding in (fit_finding(report.ranks), context_finding(report.ranks)):
            if finding is not None:
                report.findings.append(finding)
