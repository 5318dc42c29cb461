"""GPU check for `known/gpus.py` (issue 24): the machine's own card, by the name torch reports,
must be in the table with its capability and, within 3 %, its memory.

Run on a device machine from the repository root: `python3 scripts/gpu_table_check.py`.
Prints one line per check and exits 1 on a mismatch.
"""

from __future__ import annotations

import sys

import torch

from eaglegraph.known.gpus import find_gpu
from eaglegraph.rig.gpus import get_gpu


def main() -> int:
    if not torch.cuda.is_available():
        print("no CUDA device")
        return 1
    name = torch.cuda.get_device_name()
    props = torch.cuda.get_device_properties(0)
    real_gib = props.total_memory / (1 << 30)
    real_cap = (props.major, props.minor)
    found = find_gpu(name)
    print(f"device {name!r}: SM {real_cap[0]}.{real_cap[1]}, {real_gib:.2f} GiB")
    if found is None:
        print(f"FAIL: {name!r} is not in known/gpus.py")
        return 1
    print(
        f"table {found.name!r}: SM {found.capability[0]}.{found.capability[1]}, "
        f"{found.memory_gib} GiB"
    )
    ok = found.capability == real_cap and abs(found.memory_gib / real_gib - 1) < 0.03
    described = get_gpu(None, round(real_gib, 1), real_cap)
    print(f"described by --gpu-memory/--capability: {described.label()}")
    print("OK" if ok else "FAIL: capability or memory differs from the table")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
