"""How each engine names its worker processes, so a dump of many PIDs can say which rank is which.

Both engines set the process title (setproctitle) of every rank, and /proc/PID/cmdline shows it:
- vLLM: ``VLLM::Worker_DP0_PP1_TP3_EP3`` (an axis appears only when its size is > 1; EP when
  expert parallelism is on) — `vllm/v1/executor/multiproc_executor.py::WorkerProc.worker_main`
  (0.22); the engine core is ``VLLM::EngineCore_DP0`` — `vllm/v1/engine/core.py::
  EngineCoreProc.run_engine_core`. The prefix is `VLLM_PROCESS_NAME_PREFIX` (default VLLM).
- SGLang: ``sglang::scheduler_DP0_TP1_EP1`` — `sglang/srt/managers/scheduler.py::
  run_scheduler_process` (0.5.23), with PP, ATTN_CP and MOE_DP axes as well.
Launchers that set no title (torchrun, custom scripts) leave ``RANK``/``LOCAL_RANK`` in the
environment (`torch/distributed/run.py`), read from /proc/PID/environ where permitted.
"""

from __future__ import annotations

import re

# Parallel axes in the order the engines print them (vLLM, then SGLang's extra ones).
RANK_AXES: tuple[str, ...] = ("DP", "PP", "PCP", "ATTN_CP", "MOE_DP", "TP", "DCP", "EP")

# A titled worker: `<prefix>::<role>` followed by `_<AXIS><n>` parts.
TITLE = re.compile(
    r"(?P<prefix>[A-Za-z][\w.-]*)::(?P<role>[A-Za-z][A-Za-z_]*?)(?P<axes>(?:_[A-Z_]+\d+)*)\b"
)
AXIS = re.compile(
    r"_(?P<axis>" + "|".join(sorted(RANK_AXES, key=len, reverse=True)) + r")(?P<n>\d+)"
)

# The engine each title prefix belongs to (prefixes are case-insensitive).
TITLE_ENGINES: dict[str, str] = {"vllm": "vllm", "sglang": "sglang"}

# Environment variables a launcher sets per rank, most specific first.
RANK_ENV: tuple[str, ...] = ("RANK", "LOCAL_RANK")
