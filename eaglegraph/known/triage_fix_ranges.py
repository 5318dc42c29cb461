"""Which releases a known fix applies to: from the first release with the code it changed, up to
the first release that carries the fix (`known.upstream`, `released_in`).

Triage names a fix as *the* answer only when the report's engine and version lie in this range.
With the version unknown it says "if you run < X" and the check to make; a fix whose lower end
is not recorded here is never named, only offered that way or as related (a vLLM 0.9 report
must not be sent to a 2026 change of code that 0.9 did not have). Keys are upstream ids
(`known.upstream`); each row cites where the lower end was read.
"""

from __future__ import annotations

from dataclasses import dataclass

from eaglegraph.known.upstream import BY_ID
from eaglegraph.known.versions import VersionRange, parse_version


@dataclass(frozen=True)
class Since:
    """The first release that has the code a fix changed."""

    version: str
    source: str


AFFECTED_SINCE: dict[str, Since] = {
    "vllm-mrv2-eagle-padding": Since(
        "0.20.0",
        "shared/research/vllm-mrv2.md §0 (wheels read): 0.19.0 predates the MRV2 EAGLE prefill "
        "graphs the fix changed; 0.20.0 is the first release with them and already has the fix",
    ),
    "vllm-draft-prefill-attn-state": Since(
        "0.20.0",
        "shared/research/vllm-mrv2.md §0 and §3: 0.20.0 first builds the draft-prefill "
        "attention metadata the fix replaced (vllm/v1/worker/gpu/spec_decode/eagle.py)",
    ),
    "vllm-shared-eagle-pool": Since(
        "0.19.0",
        "shared/research/vllm-mrv2.md §3.3: the dedicated EAGLE pool came with the initial MRV2 "
        "EAGLE support, present in the 0.19.0 wheel (EagleCudaGraphManager)",
    ),
    "sglang-draft-extend-hidden-width": Since(
        "0.4.7",
        "PyPI sglang wheels read 2026-11-29 (git mirror too large to fetch, no SHAs): "
        "srt/speculative/eagle_draft_extend_cuda_graph_runner.py (added by #6606) is absent in "
        "0.4.6.post5 and first present in 0.4.7 with the EAGLE3 buffer sized hidden_size * 3; "
        "0.4.7-0.4.9.post2 unchanged; 0.4.9.post3 first has the #8163 target_hidden_size fix",
    ),
}


def affected(change_id: str) -> VersionRange | None:
    """Releases the fix applies to; None when either end is not known."""
    since = AFFECTED_SINCE.get(change_id)
    change = BY_ID[change_id]
    if since is None or change.released_in is None:
        return None
    return VersionRange(parse_version(since.version), change.released_in)
