"""A worker process of the isolation runner: one task as JSON on stdin, one result line out.

The job is {"task": NAME, "name": LABEL, "args": {...}} where the arguments carry a serialised
RunSpec; see `probes.runner`. The result line is prefixed so nothing else a library prints on
stdout is mistaken for it.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time


def exit_with_parent(interval: float = 0.5) -> None:
    """End this worker when the process that started it is gone (killed, or an explorer that
    quit without waiting): nobody would read the result, and a case can run for minutes."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(interval)
        os._exit(1)

    threading.Thread(target=watch, name="eaglegraph-parent-watch", daemon=True).start()


def main() -> None:
    from eaglegraph.probes.runner import MARKER, call_task

    exit_with_parent()
    job = json.loads(sys.stdin.read())
    # Fault injection for the isolation tests: make this task die or hang like a real
    # illegal memory access or a stuck NCCL wait would.
    # A job running several cases is named after all of them, comma-separated.
    fault, _, target = os.environ.get("EAGLEGRAPH_PROBE_FAULT", "").partition(":")
    if target and target in job["name"].split(","):
        if fault == "abort":
            sys.stderr.write("CUDA error: an illegal memory access was encountered (injected)\n")
            sys.stderr.flush()
            os.abort()
        if fault == "hang":
            time.sleep(3600)
    reply = call_task(job["task"], job["args"])
    sys.stdout.write(MARKER + json.dumps(reply) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
