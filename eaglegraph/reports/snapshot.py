"""The allocator snapshot (`--snapshot`): torch's memory_viz pickle of a real CUDA capture.

Unlike the other formats it is not rendered from the result: only the live allocator holds
it, so the capture writes it while it runs (`probes/capture.py`). It is registered like every
output so its path gets the same checks before the work, and `report` never offers it.
"""

from __future__ import annotations

from eaglegraph.reports.exporters import Exporter
from eaglegraph.results.capture import CaptureRun

EXPORTER = Exporter(
    name="snapshot",
    help="Write the allocator snapshot (memory_viz pickle; CUDA).",
    kinds=(CaptureRun,),
    render=None,
    rerender=False,
)
