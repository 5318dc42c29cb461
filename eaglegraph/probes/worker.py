"""A probe case in its own process: reads the case as JSON on stdin, prints the result.

Isolation is the point: an illegal memory access or a device-side assert kills the CUDA
context (and a bad pointer can kill the interpreter), so each case runs where dying costs
only that case. The result line is prefixed so nothing else on stdout is mistaken for it.
"""

from __future__ import annotations

import json
import os
import sys
import time

MARKER = "EAGLEGRAPH-PROBE-RESULT "


def main() -> None:
    from eaglegraph.probes.cases import ProbeCase, execute_case, result_to_json

    case = ProbeCase(**json.loads(sys.stdin.read()))
    # Fault injection for the isolation tests: make this case die or hang like a real
    # illegal memory access or a stuck NCCL wait would.
    fault = os.environ.get("EAGLEGRAPH_PROBE_FAULT", "")
    if fault == f"abort:{case.name}":
        sys.stderr.write("CUDA error: an illegal memory access was encountered (injected)\n")
        sys.stderr.flush()
        os.abort()
    if fault == f"hang:{case.name}":
        time.sleep(3600)
    result = execute_case(case)
    sys.stdout.write(MARKER + json.dumps(result_to_json(result)) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
