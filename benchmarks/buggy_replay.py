"""The pre-#39773 buggy replay, unguarded, for compute-sanitizer to look at.

vLLM main between PRs #37588 and #39773 with FlashInfer-style metadata: draft decodes run
PIECEWISE, tokens padded but requests not, so the decode kernel reads kv_indptr and
last_page_len rows left by the previous, larger batch. Those values are initialised and inside
the allocation, which is why memcheck and initcheck stay silent while `eaglegraph probe`
reports the read. Prints the wall time of the replayed step.

Run: PYTHONPATH=. python3 benchmarks/buggy_replay.py  (optionally under compute-sanitizer)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from eaglegraph.pair import load_pair
from eaglegraph.pair.presets import materialize
from eaglegraph.probes.spec import rig_config
from eaglegraph.rig.driver import Session
from eaglegraph.rig.step import Rig


def main() -> None:
    start = time.perf_counter()
    pair = load_pair(materialize("tiny-llama-eagle3"))
    plan = {
        "behavior": "vllm-pre-39773",
        "attention_backend": "flashinfer",
        "mode": "PIECEWISE",
        "max_num_seqs": 4,
        "num_speculative_tokens": 3,
    }
    rig = Rig(pair, rig_config(pair, plan, device="cuda", max_model_len=256))
    rig.capture()
    session = Session(rig)
    for rid in range(4):
        session.admit(rid, [5 + rid, 6, 7, 8, 9, 10], max_new_tokens=64)
    session.step()
    session.step()  # the large batch leaves its kv_indptr rows behind
    for request in list(session.running[3:]):
        session.finish(request)
    record = session.step()  # 3 requests: the PIECEWISE decode plans 4 rows (stale row 4)
    torch.cuda.synchronize()
    print(f"replayed {record.descriptors} in {time.perf_counter() - start:.1f} s total")


if __name__ == "__main__":
    main()
