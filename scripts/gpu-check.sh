#!/usr/bin/env bash
# GPU checks, run on the H100/H200 machine from the repository root (nothing installs there:
# the package runs from the tree). Usage: scripts/gpu-check.sh [tests|cuda-rig|cuda-probes|capture|memdiff|memdiff3|probe|bench|memory|memory-tables|memory-tests|memory-8b|memory-compiled|memory-refusal|memdiff-mtp|bench-capture|mtp|mtp-probes|sanitizer|badinput|views|engines|seams|mrv1|sglang-extend|all]...
# (probe-profiles, seams, mrv1, sglang-extend, ranks2, ranks4, ranks-memdiff and ranks-bench run
#  only when named;
#  ranks2 needs 2 GPUs, ranks4 needs 4)
# Every stage logs to $OUT (default /tmp/eaglegraph-gpu) and the script keeps going after a
# failing stage, so one run reports everything.
set -u
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export EAGLEGRAPH_CACHE="${EAGLEGRAPH_CACHE:-/tmp/eaglegraph-cache}" EAGLEGRAPH_NO_PROGRESS=1
OUT="${OUT:-/tmp/eaglegraph-gpu}"
mkdir -p "$OUT"
EG="python3 -m eaglegraph"
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(all)
want() { for s in "${stages[@]}"; do [ "$s" = "$1" ] || [ "$s" = all ] && return 0; done; return 1; }
named() { for s in "${stages[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
run() { local name=$1; shift; echo "=== $name: $*"; local t0=$SECONDS
  "$@" >"$OUT/$name.log" 2>&1; local rc=$?
  tail -n "${TAIL:-25}" "$OUT/$name.log"; echo "=== $name: rc=$rc in $((SECONDS - t0)) s"; }

echo "=== machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
$EG env --no-color
$EG env --json >"$OUT/env.json"

# the CUDA test stages are split so that each fits one 600 s device call
if want tests; then
  run device-tests python3 -m pytest -q -p no:cacheprovider tests/kernels tests/models tests/rig/test_step_equivalence.py
fi
if want cuda-rig; then
  run cuda-rig-tests python3 -m pytest -q -m cuda -p no:cacheprovider tests/rig
fi
# two halves (the whole directory passed 600 s at stop 34): files a-m, then n-z
if want cuda-probes || named cuda-probes-a; then
  run cuda-probe-tests-a python3 -m pytest -q -m cuda -p no:cacheprovider tests/probes/test_[a-m]*.py
fi
if want cuda-probes || named cuda-probes-b; then
  run cuda-probe-tests-b python3 -m pytest -q -m cuda -p no:cacheprovider tests/probes/test_[n-z]*.py
fi
if want capture; then
  TAIL=45 run capture-tiny $EG capture tiny-llama-eagle3 --max-num-seqs 8 --replay --no-color \
    --save "$OUT/capture-tiny.json" --trace "$OUT/capture-tiny.trace.json" --html "$OUT/capture-tiny.html" \
    --snapshot "$OUT/capture-tiny.snapshot.pickle" --force
  run report-tiny $EG report "$OUT/capture-tiny.json" --no-color
fi
if want badinput; then
  # issue 10: the rig-memory preflight lets an 8B pair through on the GPU, and refuses it with
  # both numbers (exit 3, no allocation) when another process holds 90 % of the free memory
  TAIL=20 run badinput-8b-fits $EG capture llama3.1-8b-eagle3 --random-weights --max-num-seqs 8 --no-color
  TAIL=5 run badinput-8b-refused python3 -c "import subprocess, sys, torch
hog = torch.empty(int(torch.cuda.mem_get_info()[0] * 0.9), dtype=torch.uint8, device='cuda')
sys.exit(subprocess.call([sys.executable, '-m', 'eaglegraph', 'capture', 'llama3.1-8b-eagle3', '--random-weights']))"
fi
if want views; then
  # issue 10: real CUDA runs at 80 and 200 columns (an 8B capture, a memdiff, and every run the
  # stages before saved in $OUT): no line past the width, no number cut to "…", no split name
  TAIL=8 run views-capture-8b $EG capture llama3.1-8b-eagle3 --random-weights --max-num-seqs 32 \
    --no-color --save "$OUT/views-capture-8b.json" --force
  TAIL=8 run views-memdiff-tiny $EG memdiff tiny-llama-eagle3 --max-num-seqs 16 --no-color \
    --save "$OUT/views-memdiff-tiny.json" --force
  TAIL=20 run views-80 python3 scripts/check_views.py "$OUT"/*.json
fi
if named ranks2 || named ranks4; then
  # issue 25: one NCCL process per GPU; the all-reduces inside the captured graphs; replay ==
  # eager on every rank; rank 0 against TP 1 (float32: every token); the probe on every rank;
  # a rank that runs eagerly where its peer replays, named by the hang detector; DeepSeek MTP
  # (MLA + MoE) with expert parallelism; per-rank pools and communicator memory. Uncompiled
  # (Inductor adds minutes per rank and per rebuilt rig, and no collective); every command
  # bounded, with progress lines in its log.
  N=2; named ranks4 && N=4
  R="env EAGLEGRAPH_NO_PROGRESS= $EG"
  TAIL=6 run ranks-topology bash -c "nvidia-smi topo -m | head -4; python3 -c \"import torch
n = torch.cuda.device_count()
print('peer access', [[int(torch.cuda.can_device_access_peer(i, j)) for j in range(n)] for i in range(n)])\""
  TAIL=24 run ranks-tp$N-llama-fp32 timeout 210 $R capture tiny-llama-eagle3 --tp $N --device cuda \
    --dtype float32 --max-num-seqs 4 -K 2 --replay --no-compile --rank-timeout 200 --no-color \
    --save "$OUT/ranks-tp$N-llama-fp32.json" --force
  TAIL=20 run ranks-tp$N-hang timeout 100 env EAGLEGRAPH_RANK_FAULT=skip-replay:1:3 $R capture \
    tiny-llama-eagle3 --tp $N --device cuda --max-num-seqs 4 -K 2 --replay --no-compare-tp1 \
    --no-compile --rank-deadline 15 --rank-timeout 90 --no-color
  TAIL=20 run ranks-tp$N-probe timeout 100 $R probe tiny-llama-eagle3 --tp $N --device cuda \
    --mode FULL --batches 1 --no-compile --no-color
  if [ $N = 2 ]; then
    TAIL=24 run ranks-tp2-deepseek-ep timeout 170 $R capture deepseek-v3-mtp-4l --tp 2 \
      --enable-expert-parallel --device cuda --random-weights -K 1 --max-num-seqs 2 --replay \
      --no-compare-tp1 --no-compile --rank-timeout 160 --no-color \
      --save "$OUT/ranks-tp2-deepseek-ep.json" --force
  fi
fi
if named ranks-memdiff; then
  # issue 25: per-rank pools under shared and dedicated, each a ranked capture of its own;
  # per-rank outside-allocator (NCCL) memory and max - min across ranks
  TAIL=30 run ranks-memdiff-tp2 timeout 240 env EAGLEGRAPH_NO_PROGRESS= $EG memdiff \
    tiny-llama-eagle3 --tp 2 --device cuda --max-num-seqs 4 -K 2 --pool shared \
    --against dedicated --no-compile --no-color --save "$OUT/ranks-memdiff-tp2.json" --force
fi
if named ranks-bench; then
  # issue 25: TP 2 capture against TP 1 on the same cards, and the ledger per collective
  TAIL=30 run ranks-bench timeout 200 python3 benchmarks/bench_ranks.py --device cuda --runs 2
fi
if want probe; then
  # issue 13: under 1 minute on the GPU, no findings under vllm-current / sglang-current
  TAIL=30 run probe-current $EG probe tiny-llama-eagle3 --mode all --no-color --save "$OUT/probe-current.json" --force
  TAIL=30 run probe-current-flashinfer $EG probe tiny-llama-eagle3 --mode all --attention-backend flashinfer --no-color
  TAIL=30 run probe-sglang-current $EG probe tiny-llama-eagle3 --behavior sglang-current --mode all --no-color
  TAIL=30 run probe-k5 $EG probe tiny-llama-eagle3 --mode FULL_AND_PIECEWISE -K 5 --no-color
  # every mutant, four at a time (one process each; the stage must stay under ~500 s in all):
  # expected "found N/N, located N/N" (N: every mutant of benchmarks/mutants.py), each mode's
  # cell located or equivalent (with why)
  TAIL=60 run probe-mutants python3 benchmarks/bench_mutants.py --device cuda --jobs 4 \
    --json "$OUT/probe-mutants.json"
  # a device fault is named by phase, kernel and buffer (a device assert kills the context; a
  # killed worker leaves its checkpoint); the slot mutants capture under real stream capture
  TAIL=10 run probe-attribution python3 -m pytest -q -m cuda -p no:cacheprovider \
    tests/probes/test_attribution.py
  TAIL=40 run probe-pre39773-flashinfer $EG probe tiny-llama-eagle3 --behavior vllm-pre-39773 \
    --attention-backend flashinfer --mode PIECEWISE --no-color --save "$OUT/probe-pre39773-fi.json" --force
  TAIL=40 run probe-pre39773-full $EG probe tiny-llama-eagle3 --behavior vllm-pre-39773 \
    --mode FULL_AND_PIECEWISE --no-color --save "$OUT/probe-pre39773-full.json" --force
  TAIL=30 run probe-sglang $EG probe tiny-llama-eagle3 --behavior sglang-pre-10892 --mode FULL --no-color
fi
if named probe-profiles; then
  # every profile by release, every mode (only when named: ~17 runs): current semantics must be
  # clean, old ones show their seed bugs; one summary line each
  for b in $($EG probe --list-behaviors --json | python3 -c \
      'import json,sys; print(" ".join(b["name"] for b in json.load(sys.stdin)["behaviors"]))'); do
    TAIL=4 run "probe-profile-$b" $EG probe tiny-llama-eagle3 --behavior "$b" --mode all --no-color \
      --fail-on never --save "$OUT/probe-profile-$b.json" --force
  done
fi
if want memdiff; then
  # issue 15: PR #44078's setup under vLLM 0.22 (its dedicated pool) and under the current
  # profile, the target compiled as vLLM does (the default on CUDA); expected: about 0.27 GiB
  # saved in both, identical draft tokens
  for b in vllm-0.22 vllm-current; do
    TAIL=8 run "memdiff-eagle1-$b" $EG memdiff llama3.1-8b-eagle1 --random-weights -K 5 \
      --max-num-seqs 1024 --pool shared --against dedicated --behavior $b --no-color \
      --save "$OUT/memdiff-eagle1-$b.json" --force
  done
fi
if want memdiff3; then
  TAIL=8 run memdiff-eagle3 $EG memdiff llama3.1-8b-eagle3 --random-weights -K 5 --max-num-seqs 1024 \
    --pool shared --against dedicated --behavior vllm-0.22 --no-color \
    --save "$OUT/memdiff-eagle3.json" --force
fi
if want memory || named memory-tests; then
  # issue 15: simulator == CUDA allocator (pools by segment_pool_id); prediction within 10 % per
  # pool; refusal before an OOM; the compiled target replays the eager tokens; "took" adds up
  TAIL=30 run memory-tests python3 -m pytest -q -s -p no:cacheprovider tests/probes/test_memory_predict_cuda.py \
    tests/rig/test_compiled_rig.py tests/models/test_compile.py
  # only the CUDA-marked ones: the emulated tests there need Triton's interpreter (off on a GPU)
  TAIL=10 run memory-cuda-tests python3 -m pytest -q -s -p no:cacheprovider -m cuda \
    tests/probes/test_capture.py tests/probes/test_compile_cuda.py
fi
if want memory; then
  # predicted on a CPU beforehand (benchmarks/memory_predictions.json, --predict-only), measured
  # here, each case in a fresh process: the real-width pairs at R=64 (~90 s)
  TAIL=20 run memory-table-r64 python3 benchmarks/predict_vs_measured.py --max-num-seqs 64 \
    --predictions benchmarks/memory_predictions.json --json "$OUT/memory-table-r64.json"
fi
if want memory-tables; then
  # the tiny pairs (R=8, ~200 s) and the PR #44078 setup (R=1024, K=5) under vllm-0.22 and
  # vllm-current (~100 s), both policies
  for r in 8 1024; do
    TAIL=45 run "memory-table-r$r" python3 benchmarks/predict_vs_measured.py --max-num-seqs $r \
      --predictions benchmarks/memory_predictions.json --json "$OUT/memory-table-r$r.json"
  done
fi
if want memory-8b; then
  TAIL=40 run memory-capture-tiny $EG capture tiny-llama-eagle3 --max-num-seqs 8 --no-color \
    --save "$OUT/memory-capture-tiny.json" --force
  TAIL=40 run memory-capture-8b-compiled $EG capture llama3.1-8b-eagle1 --random-weights -K 5 \
    --max-num-seqs 1024 --compile --no-color --save "$OUT/memory-capture-8b-compiled.json" --force
  TAIL=40 run memory-capture-8b-eager $EG capture llama3.1-8b-eagle1 --random-weights -K 5 \
    --max-num-seqs 1024 --no-color --save "$OUT/memory-capture-8b-eager.json" --force
  TAIL=10 run memory-bench-capture python3 benchmarks/bench_capture.py
fi
if want memory-compiled; then
  # the compiled target (vLLM's default, and so memdiff's and capture's on CUDA): the CPU
  # prediction (uncompiled forward) against compiled captures of the tiny EAGLE pairs
  TAIL=30 run memory-table-compiled python3 benchmarks/predict_vs_measured.py --compile \
    --presets tiny-llama-eagle1,tiny-llama-eagle3,tiny-deepseek-mtp --max-num-seqs 8 \
    --predictions benchmarks/memory_predictions.json --json "$OUT/memory-table-compiled.json"
fi
if want memory-refusal; then
  # refusal before an OOM: the CUDA test, then the command with most of the device held
  TAIL=12 run memory-refusal-test python3 -m pytest -q -p no:cacheprovider \
    tests/probes/test_memory_predict_cuda.py -k "stops_before_an_oom"
fi
if want mtp; then
  # issue 12: MLA/MTP/DFlash on CUDA (equivalence to the dense reference, then replay == eager
  # for every mode x pool the profiles allow), real-geometry capture and memdiff
  run mtp-tests python3 -m pytest -q -p no:cacheprovider tests/kernels/test_mla.py \
    tests/rig/test_mtp_equivalence.py tests/rig/test_mtp_multi_module.py tests/rig/test_dflash.py
  TAIL=40 run mtp-cuda-matrix python3 -m pytest -q -m cuda -p no:cacheprovider tests/rig/test_mtp_kinds.py
  TAIL=45 run capture-mtp-tiny $EG capture tiny-deepseek-mtp --max-num-seqs 8 --replay --no-color \
    --save "$OUT/capture-mtp-tiny.json" --force
  # DeepSeek-V3 at real widths, 4 of 61 target layers + its MTP layer, 16 of 256 routed experts
  TAIL=45 run capture-mtp-real $EG capture deepseek-v3-mtp-4l --random-weights -K 3 --max-num-seqs 64 \
    --no-color --save "$OUT/capture-mtp-real.json" --force
fi
if want mtp || named memdiff-mtp; then
  # the MLA target compiled as vLLM compiles it (the default on CUDA)
  TAIL=40 run memdiff-mtp-real $EG memdiff deepseek-v3-mtp-4l --random-weights -K 3 --max-num-seqs 64 \
    --pool shared --against dedicated --no-color --save "$OUT/memdiff-mtp-real.json" --force
  TAIL=40 run memdiff-mtp-eager $EG memdiff deepseek-v3-mtp-4l --random-weights -K 3 --max-num-seqs 64 \
    --pool shared --against dedicated --no-compile --no-color --save "$OUT/memdiff-mtp-eager.json" --force
fi
if want mtp-probes; then
  # issue 12: the probe matrix on the tiny MTP/DFlash presets (clean on current profiles; two
  # modules: vLLM's window speculator at K=2, SGLang's NextN path on module 0 at its default K)
  TAIL=30 run probe-mtp-current $EG probe tiny-deepseek-mtp --mode all --no-color
  TAIL=30 run probe-mtp-sglang $EG probe tiny-deepseek-mtp --behavior sglang-current --mode all --no-color
  TAIL=40 run probe-mtp-pre39773 $EG probe tiny-deepseek-mtp --behavior vllm-pre-39773 \
    --attention-backend flashinfer --mode PIECEWISE --no-color
  TAIL=30 run probe-mtp2-current $EG probe tiny-deepseek-mtp2 -K 2 --mode all --no-color
  TAIL=30 run probe-mtp2-sglang $EG probe tiny-deepseek-mtp2 --behavior sglang-current --mode all --no-color
  TAIL=30 run probe-qwen-mtp-current $EG probe tiny-qwen3-mtp --mode all --no-color
  TAIL=30 run probe-dflash-current $EG probe tiny-qwen3-dflash --mode all --no-color
  TAIL=30 run probe-dflash-sglang $EG probe tiny-qwen3-dflash --behavior sglang-current --mode all \
    --no-color
  # expected: stale dflash.sample_indices / dflash.seq_lens reads (vllm#50065), exit 1
  TAIL=40 run probe-dflash-pre50065 $EG probe tiny-qwen3-dflash --behavior vllm-pre-50065 \
    --max-num-seqs 4 -K 3 --capture-sizes 4,8,16 --mode FULL_AND_PIECEWISE --batches 3 --no-color
fi
if named seams; then
  # issue 23: the speculator strategies, the one padding rule and the hook handles on CUDA —
  # one capture with replay per style (EAGLE, multi-module MTP window, DFlash block), the seed
  # bugs under their old profiles, and a clean probe of every mode under current semantics
  TAIL=12 run seams-capture-eagle $EG capture tiny-llama-eagle3 --max-num-seqs 8 --replay --no-color
  TAIL=12 run seams-capture-window $EG capture tiny-deepseek-mtp2 -K 2 --max-num-seqs 8 --replay --no-color
  TAIL=12 run seams-capture-block $EG capture tiny-qwen3-dflash --max-num-seqs 8 --replay --no-color
  TAIL=14 run seams-probe-pre39773 $EG probe tiny-llama-eagle3 --behavior vllm-pre-39773 \
    --attention-backend flashinfer --mode PIECEWISE --no-color --fail-on never
  TAIL=14 run seams-probe-sglang-pre10892 $EG probe tiny-llama-eagle3 --behavior sglang-pre-10892 \
    --mode FULL --no-color --fail-on never
  TAIL=14 run seams-probe-dflash-pre50065 $EG probe tiny-qwen3-dflash --behavior vllm-pre-50065 \
    --mode FULL_AND_PIECEWISE --no-color --fail-on never
  TAIL=14 run seams-probe-current $EG probe tiny-llama-eagle3 --mode all --no-color
  TAIL=14 run seams-probe-window-current $EG probe tiny-deepseek-mtp2 -K 2 --mode all --no-color
fi
if want engines; then
  # issue 11: every profile's graph replays give the eager tokens and its probe is clean on real
  # graphs (fused K-1 draft decode from 0.28); the seed bugs still reproduce under their profiles
  TAIL=30 run engines-cuda-tests python3 -m pytest -q -m cuda -p no:cacheprovider \
    tests/probes/test_profile_semantics.py tests/probes/test_probe.py
  run engines-plans python3 -m pytest -q -p no:cacheprovider tests/rig/test_engine_plans.py tests/known
  TAIL=30 run engines-probe-0.24 $EG probe tiny-llama-eagle3 --engine vllm==0.24.0 --mode all --no-color
  TAIL=30 run engines-probe-0.28-fused $EG probe tiny-llama-eagle3 --engine vllm==0.28.0 -K 5 \
    --mode FULL_AND_PIECEWISE --no-color
  TAIL=30 run engines-probe-sglang-0.5.9 $EG probe tiny-llama-eagle3 --engine sglang==0.5.9 --mode FULL --no-color
  TAIL=40 run engines-inspect-b200 $EG inspect llama3.1-8b-eagle3 --engine vllm==0.33.0 --gpu B200 \
    --attention-backend flashinfer -K 5 --no-color
fi
if named mrv1; then
  # issue 28 part 2: vLLM's V1 GPU model runner (MRV1) in the rig on real graphs. Expect
  # "replay==eager True" for each mode (drafter PIECEWISE graphs captured in the target's
  # PIECEWISE pass, every draft pass dispatching into them), a clean probe under current MRV1
  # semantics (--runner v1), hazard draft-decode-rejected-kv (vllm#29845) on eagle.seq_lens
  # under vllm-mrv1-pre-29845, and a memdiff of the MRV1 capture (identical draft tokens)
  TAIL=12 run mrv1-replay python3 -c "import torch
from eaglegraph.known.runners import ModelRunner
from eaglegraph.pair import load_pair
from eaglegraph.pair.presets import materialize
from eaglegraph.rig.config import RigConfig
from eaglegraph.rig.driver import run_workload
from eaglegraph.rig.options import PlanChoices, resolve_plan_options
from eaglegraph.rig.step import Rig
from eaglegraph.rig.workload import Schedule
pair, sched = load_pair(materialize('tiny-llama-eagle3')), Schedule.grow_shrink(8, waves=2)
def rig(mode):
    opts = resolve_plan_options(PlanChoices(max_num_seqs=8, num_speculative_tokens=3, mode=mode,
        max_num_batched_tokens=128, runner=ModelRunner.MRV1))
    return Rig(pair, RigConfig(opts, torch.device('cuda'), dtype='float32', max_model_len=512))
eager = run_workload(rig('NONE'), sched).token_trace()
for mode in ('FULL_AND_PIECEWISE', 'PIECEWISE', 'FULL'):
    r = rig(mode); events, findings = r.capture()
    res = run_workload(r, sched)
    used = sorted({d.split('(')[0] for s in res.steps for p, d in s.descriptors.items() if p != 'target'})
    print(mode, type(r.speculator).__name__, len(events), 'graphs, draft passes', used,
          'replay==eager', res.token_trace() == eager, 'findings', len(findings))"
  TAIL=30 run mrv1-cuda-tests python3 -m pytest -q -m cuda -p no:cacheprovider tests/rig/test_mrv1_eagle.py
  TAIL=20 run mrv1-probe-current $EG probe tiny-llama-eagle3 --runner v1 --mode all --no-color
  TAIL=20 run mrv1-probe-mtp $EG probe tiny-deepseek-mtp --runner v1 --mode FULL_AND_PIECEWISE \
    --no-color
  TAIL=20 run mrv1-probe-pre29845 $EG probe tiny-llama-eagle3 --behavior vllm-mrv1-pre-29845 \
    --mode FULL_AND_PIECEWISE --no-color --fail-on never
  TAIL=25 run mrv1-memdiff $EG memdiff tiny-llama-eagle3 --runner v1 --pool shared \
    --against dedicated --max-num-seqs 8 --no-color
fi
if named sglang-extend; then
  # issue 28 (SGLang half): the draft extend after verify replays its FULL graphs, one per batch
  # size (sglang-current, flash_attn), or the prompt prefill's breakable graphs where the release
  # had no extend runner (sglang-0.5.15, flash_attn). Expect per line "replay==eager True",
  # "findings 0", draft extend ran ['FULL', 'NONE'] resp. ['BREAKABLE'] (NONE: steps with new
  # prompts), outside step [('draft_prompt_prefill', 10)]
  TAIL=6 run sglang-extend-replay python3 -c "import torch
from eaglegraph.pair import load_pair
from eaglegraph.pair.presets import materialize
from eaglegraph.rig.config import RigConfig
from eaglegraph.rig.driver import run_workload
from eaglegraph.rig.options import PlanChoices, resolve_plan_options
from eaglegraph.rig.step import Rig
from eaglegraph.rig.workload import Schedule
pair, sched = load_pair(materialize('tiny-llama-eagle3')), Schedule.grow_shrink(8, waves=2)
def rig(beh, mode=None):
    opts = resolve_plan_options(PlanChoices(behavior=beh, attention_backend='flash_attn',
        max_num_seqs=8, num_speculative_tokens=3, mode=mode, max_num_batched_tokens=64))
    return Rig(pair, RigConfig(opts, torch.device('cuda'), dtype='float32', max_model_len=512))
for beh in ('sglang-current', 'sglang-0.5.15'):
    eager = run_workload(rig(beh, 'NONE'), sched).token_trace()
    r = rig(beh); events, findings = r.capture()
    res = run_workload(r, sched)
    used = sorted({d.split('(')[0] for s in res.steps for p, d in s.descriptors.items() if p == 'draft_prefill'})
    print(beh, len(events), 'graphs, draft extend ran', used, 'outside step',
          [(p.phase, len(p.descriptors)) for p in r.plan.outside_step],
          'replay==eager', res.token_trace() == eager, 'findings', len(findings))"
  TAIL=20 run sglang-extend-probe-0.5.15 $EG probe tiny-llama-eagle3 --behavior sglang-0.5.15 \
    --attention-backend flash_attn --mode all --no-color
fi
if want bench || named bench-capture; then
  TAIL=10 run bench-capture python3 benchmarks/bench_capture.py
fi
if want bench; then
  TAIL=10 run bench-guards python3 benchmarks/bench_guards.py
fi
if want sanitizer; then
  TAIL=6 run buggy-plain python3 benchmarks/buggy_replay.py
  TAIL=12 run buggy-memcheck timeout 300 compute-sanitizer --tool memcheck --print-limit 20 python3 benchmarks/buggy_replay.py
  TAIL=12 run buggy-initcheck timeout 300 compute-sanitizer --tool initcheck --print-limit 20 python3 benchmarks/buggy_replay.py
  # the same, restricted to the kernel that performs the stale read
  TAIL=8 run buggy-memcheck-decode timeout 300 compute-sanitizer --tool memcheck --kernel-name kns=csr_decode python3 benchmarks/buggy_replay.py
  TAIL=8 run buggy-initcheck-decode timeout 300 compute-sanitizer --tool initcheck --kernel-name kns=csr_decode python3 benchmarks/buggy_replay.py
  TAIL=25 run probe-buggy $EG probe tiny-llama-eagle3 --behavior vllm-pre-39773 --attention-backend flashinfer \
    --mode PIECEWISE --batches 3 --no-color
fi
# issue 26: instrumentation overhead that can be trusted: interleaved bare/instrumented captures
# of the 8B preset (fresh rig each), pairs added for ~150 s; prints the mean overhead with its
# 95 % CI and the per-graph medians. Run only when named: scripts/gpu-check.sh overhead
if named overhead; then
  TAIL=18 run overhead python3 benchmarks/bench_capture.py --budget-s 140 --pairs 60 --max-num-seqs 16 --no-latency
fi
# issue 27: the probe under live-server schedules (a `live` case per mode: slots permuted each
# step, chunked prefill, preemption) on every preset on CUDA — expect 0 findings each — and
# the request-identity / MTP-window mutants, each found. Run only when named:
# scripts/gpu-check.sh live-schedule (probes) live-mutants (mutants)
if named live-schedule; then
  TAIL=12 run live-eagle3 $EG probe tiny-llama-eagle3 --mode all --no-color
  TAIL=12 run live-eagle1 $EG probe tiny-llama-eagle1 --mode all --no-color
  TAIL=12 run live-mtp $EG probe tiny-deepseek-mtp --mode all --no-color
  TAIL=12 run live-mtp2 $EG probe tiny-deepseek-mtp2 -K 2 --mode all --no-color
  TAIL=12 run live-dflash $EG probe tiny-qwen3-dflash --mode all --no-color
fi
if named live-mutants; then
  TAIL=16 run live-mutants python3 benchmarks/bench_mutants.py --device cuda --jobs 2 \
    --only block-table-by-row mtp-cache-by-row mtp-window-not-cached gather-one-row-past
fi
# issue 27: findings that locate: a divergence replayed from its step's start names the phase
# and kernel that last wrote it (inside CUDA graphs: the phase). Expect 0 baseline findings and
# "found 5/5, located 5/5" in each mode. Run only when named: scripts/gpu-check.sh locate
if named locate; then
  TAIL=30 run locate python3 benchmarks/bench_mutants.py --device cuda --jobs 2 \
    --mode NONE,FULL_AND_PIECEWISE --only draft-kv-into-target-layer draft-shifts-hidden-in-place \
    kv-write-one-short rejected-not-counted next-token-row-off --json "$OUT/locate.json"
fi
ls -la "$OUT"
