"""What an engine refuses when it starts: plan settings a server would not run at all.

Each row names the setting, the setting that bounds it, the engines that check it and where
(the release's file::function), and the engine's own words. `capture`, `probe` and `memdiff`
refuse such a plan before any work (exit 2, `--force` runs it anyway); `inspect` shows it as a
warning, since it only describes the plan.
"""

from __future__ import annotations

from dataclasses import dataclass

from eaglegraph.known.versions import ENGINE_LABELS


@dataclass(frozen=True)
class StartupLimit:
    """`value` must not exceed `bound` (both fields of the resolved plan options)."""

    id: str
    engines: tuple[str, ...]  # the frameworks whose startup checks it
    value: str  # the plan field checked, as the rig's options name it
    bound: str  # the plan field it must not exceed
    engine_message: str  # the engine's error, with {value} and {bound}
    source: str  # where the engine checks it

    def flag(self, field: str) -> str:
        return "--" + field.replace("_", "-")

    def violation(self, framework: str, options: object) -> str | None:
        """One line naming the limit when `options` break it under `framework`, else None."""
        if framework not in self.engines:
            return None
        value, bound = getattr(options, self.value), getattr(options, self.bound)
        if value <= bound:
            return None
        words = self.engine_message.format(value=value, bound=bound)
        engine = ENGINE_LABELS.get(framework, framework)
        return (
            f"{self.flag(self.value)} {value} exceeds {self.flag(self.bound)} {bound}, the "
            f"engine's limit: {engine} refuses this at startup ({words!r})"
        )


STARTUP_LIMITS = (
    StartupLimit(
        id="seqs-within-batched-tokens",
        engines=("vllm",),
        value="max_num_seqs",
        bound="max_num_batched_tokens",
        engine_message=(
            "max_num_batched_tokens ({bound}) must be greater than or equal to "
            "max_num_seqs ({value})."
        ),
        # raises ValueError while building the engine's config (every release since V1)
        source="vllm/config/scheduler.py::SchedulerConfig.verify_max_model_len "
        "(https://github.com/vllm-project/vllm/blob/f0de1a604cad003379e5bb4dfc3cc5d2a1f25fa8/"
        "vllm/config/scheduler.py#L249-L285)",
    ),
)


def startup_refusals(framework: str, options: object) -> list[str]:
    """The startup checks `options` fail under `framework`, one line each (empty: it starts)."""
    found = (limit.violation(framework, options) for limit in STARTUP_LIMITS)
    return [line for line in found if line is not None]
