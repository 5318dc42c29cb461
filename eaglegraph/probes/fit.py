"""Will the planned graphs fit? The prediction against the memory a device has left.

Before capturing, `capture` and `memdiff` hold the predicted graph-pool bytes of the chosen
policy against what the device can still give (free memory plus the default pool's cached
blocks, which the allocator releases before it fails). When they do not fit, the recording is
re-simulated without the largest captures — graphs are captured largest first and the pool's
size follows the largest — to find the largest capture size that fits, and the
`--max-num-seqs` whose uniform decode batch (`R·(K+1)` tokens) stays within it.
"""

from __future__ import annotations

from dataclasses import dataclass

from eaglegraph.probes.allocator_sim import Alloc, Event
from eaglegraph.probes.memory_predict import Recording, predict_policy


@dataclass
class FitCheck:
    """The verdict, with the numbers that back it."""

    policy: str
    predicted_bytes: int
    available_bytes: int
    fits: bool
    largest_capture: int
    largest_capture_that_fits: int | None = None
    max_num_seqs_that_fit: int | None = None

    def message(self) -> str:
        gib = 2**30
        head = (
            f"the {self.policy} graph pools need {self.predicted_bytes / gib:.2f} GiB (predicted) "
            f"and the device has {self.available_bytes / gib:.2f} GiB left"
        )
        if self.fits:
            return head
        if self.largest_capture_that_fits is None:
            return head + "; not even the smallest capture size fits: lower --max-model-len"
        hint = f"; capture sizes up to {self.largest_capture_that_fits} fit"
        if self.max_num_seqs_that_fit:
            hint += f" (e.g. --max-num-seqs {self.max_num_seqs_that_fit})"
        return head + hint + ", or pass --capture-sizes with fewer, smaller sizes"


def without_larger(recording: Recording, largest: int) -> Recording:
    """The recording restricted to captures of at most `largest` tokens."""
    kept = {s.index for s in recording.scopes if s.num_tokens <= largest}
    allocs = {e.id for e in recording.events if isinstance(e, Alloc) and e.graph in kept}
    events: list[Event] = [
        e for e in recording.events if (e.graph in kept if isinstance(e, Alloc) else e.id in allocs)
    ]
    return Recording([s for s in recording.scopes if s.index in kept], events, recording.dtype)


def check_fit(
    recording: Recording,
    policy: str,
    available_bytes: int,
    num_speculative_tokens: int,
    headroom_bytes: int = 0,
) -> FitCheck:
    """Compare the prediction with `available_bytes` (less `headroom_bytes`)."""
    budget = available_bytes - headroom_bytes
    predicted = predict_policy(recording, policy).reserved_bytes
    sizes = sorted({s.num_tokens for s in recording.scopes}, reverse=True)
    check = FitCheck(policy, predicted, available_bytes, predicted <= budget, max(sizes, default=0))
    if check.fits:
        return check
    for size in sizes[1:]:
        if predict_policy(without_larger(recording, size), policy).reserved_bytes <= budget:
            check.largest_capture_that_fits = size
            seqs = size // (num_speculative_tokens + 1)
            check.max_num_seqs_that_fit = seqs or None
            break
    return check
