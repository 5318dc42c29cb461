"""One rank's process: join the deployment, run the rank task, write the result, leave.

Started by `probes.ranks` with the rank in `EAGLEGRAPH_RANK` and the job as JSON on stdin;
the result goes to `rank<N>.json` in the run's folder, the ledger beside it. A rank that
fails writes its error there instead; one that is stuck is ended by the supervisor.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path

RANK_ENV = "EAGLEGRAPH_RANK"


def main() -> None:
    import torch

    from eaglegraph.errors import EagleGraphError
    from eaglegraph.probes.rank_tasks import RANK_TASKS
    from eaglegraph.probes.spec import RunSpec
    from eaglegraph.probes.worker import exit_with_parent
    from eaglegraph.results.parallel import ParallelLayout
    from eaglegraph.rig.ranks import RankRuntime

    exit_with_parent()
    job = json.loads(sys.stdin.read())
    rank = int(os.environ[RANK_ENV])
    folder = Path(job["folder"])
    spec = RunSpec.from_json(job["spec"])
    layout = ParallelLayout(**job["layout"])
    if spec.device == "cuda":
        torch.cuda.set_device(rank % torch.cuda.device_count())
        device = torch.device("cuda", torch.cuda.current_device())
    else:
        device = torch.device("cpu")
    result_path = folder / f"rank{rank}.json"
    try:
        with RankRuntime(
            layout, rank, job["init_method"], folder / f"rank{rank}.ledger", device,
            timeout_s=float(job["timeout_s"]), control_timeout_s=float(job["run_timeout_s"]),
        ) as runtime:  # fmt: skip
            reply = {"value": RANK_TASKS[job["task"]](runtime, spec, job["args"])}
            # every collective of the task is behind it: the rank may leave on its own
            result_path.write_text(json.dumps(reply), encoding="utf-8")
            _leave(0)
    except EagleGraphError as exc:
        result_path.write_text(json.dumps({"error": str(exc), "exit_code": exc.exit_code}))
        _leave(exc.exit_code)
    except Exception as exc:  # a rank's crash is a finding: its first line goes to the parent
        first = (
            f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
        )
        result_path.write_text(json.dumps({"error": first, "exit_code": 1}))
        traceback.print_exc()
        _leave(1)


def _leave(code: int) -> None:
    """Exit without tearing the process group down: destroying an NCCL communicator whose
    collectives are captured in live CUDA graphs blocks until the graphs are gone (vLLM aborts
    it from a thread with a timeout for this reason; seen here on 2 H100s: both ranks wrote
    their results and then hung in the teardown). The process's end frees all of it."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
