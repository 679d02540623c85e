#!/usr/bin/env bash
# The heaviest notebooks' `paper` runs on one CUDA GPU, archived in one go (issues 38, 39): what a session
# lent a GPU runs, and what a GPU owner runs to bring the book's long columns to the papers' scale.
#
#   OUT=gpu_out DATA_DIR=../shared/data bash benchmarks/gpu_paper.sh
#
# Each notebook runs as its own `python -m qlib.book archive` process, side by side: GPU_NBS on $DEVICE,
# CPU_NBS (CPU-bound notebooks) with $THREADS threads each on the machine's other cores. Every process
# stops at LIMIT seconds; what finished is archived under archive/$PROFILE/ and packed into
# $OUT/archive.tgz (unpack it at the repository's root), with each run's log in $OUT/logs.tgz. Entries
# are written without smoke rows (--no-smoke): add them on the machine that revalidates
# (`python -m qlib.book archive --smoke-only --only …`). CHECK=1 also runs benchmarks/gpu_check.sh
# beside them (its timings then share the machine: say so when quoting them). PROBES=1 also measures, on
# $DEVICE, one Figure 8 (law, repetition) at the paper's d and one Figure 2 vector at 2^24
# (eden_paper_probes.py), and PROBE_NBS' `paper` time from two scaled runs (paper_time.py, fractions
# PROBE_FRACTIONS of their round counts): the GPU times of the runs too long for LIMIT. If the book's
# packages do not import, the archive runs are skipped and the probes still run.
#
# A run longer than one call resumes in the next (qlib.resume): every finished unit (a Figure 8 (law,
# repetition), a federated run, …) is packed into $OUT/units.tgz, and a later call given it back as
# UNITS_IN (carry it: e.g. copy it to .gpuunits/units.tgz, a path .gitignore keeps out of git)
# unpacks it first, so its runs reuse those units and compute only the rest (the log says how many).
set -u
OUT=${OUT:-gpu_out}
DATA_DIR=${DATA_DIR:-${QLIB_DATA_DIR:-../shared/data}}
PY=${PY:-python3}
PROFILE=${PROFILE:-paper}
DEVICE=${DEVICE:-cuda}
LIMIT=${LIMIT:-520}
THREADS=${THREADS:-4}
GPU_NBS=${GPU_NBS-"eden/02 eden/05 eden/01"}
CPU_NBS=${CPU_NBS-"attacks/01 attacks/02"}
CHECK=${CHECK:-1}
PROBES=${PROBES:-0}
PROBE_NBS=${PROBE_NBS-"eden/05-federated"}
PROBE_FRACTIONS=${PROBE_FRACTIONS:-"0.01 0.02"}
mkdir -p "$OUT" _build/gpu-logs
export PYTHONUNBUFFERED=1 QLIB_DATA_DIR="$DATA_DIR" PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export QLIB_CACHE_DIR=${QLIB_CACHE_DIR:-$(mktemp -d)}
t0=$SECONDS
# fail fast: everything a run needs imports, and the kernel papermill starts exists
BOOK_OK=1
$PY -c "import papermill, ipykernel, nbclient, dp_accounting, zlib_ng, qlib.book.runner, qlib.book.archive
from jupyter_client.kernelspec import KernelSpecManager; print('kernel', KernelSpecManager().get_kernel_spec('python3').argv[:3])" || BOOK_OK=0
if [ "$BOOK_OK" = 0 ]; then
  echo "the book's packages do not import: no archive runs"
  [ "$PROBES" = 1 ] || [ "$CHECK" = 1 ] || exit 3
  GPU_NBS="" CPU_NBS="" PROBE_NBS=""
fi

echo "=== machine"
nvidia-smi -L 2>&1 | head -2
$PY -c "import torch, os; print('torch', torch.__version__, '| cuda', torch.cuda.is_available() and torch.cuda.get_device_name(0), '| cores', os.cpu_count())"
echo "=== estimate (2-core CPU times of benchmarks/README.md; each run stops at ${LIMIT} s)"
for nb in $GPU_NBS $CPU_NBS; do
  grep -o "^| \`$nb[^|]*| [^|]*|" benchmarks/README.md | head -1 | sed 's/^| //'
done

if [ -n "${UNITS_IN:-}" ] && [ -f "$UNITS_IN" ]; then
  tar xzf "$UNITS_IN" && echo "=== units of an earlier call unpacked from $UNITS_IN: $(tar tzf "$UNITS_IN" | grep -c '\.pkl$') files"
fi

run_one() {  # notebook, device, extra args...
  local nb=$1 dev=$2; shift 2
  local tag; tag=$(echo "$nb" | tr '/' '-')
  local s=$SECONDS
  timeout "$LIMIT" $PY -m qlib.book archive --profile "$PROFILE" --device "$dev" --only "$nb" --jobs 1 --no-smoke \
      --output-dir "_build/gpu-$tag" --data-dir "$DATA_DIR" "$@" > "_build/gpu-logs/$tag.log" 2>&1
  echo "$nb: rc=$? after $((SECONDS - s)) s" | tee -a _build/gpu-logs/summary.log
}

for nb in $GPU_NBS; do run_one "$nb" "$DEVICE" & done
for nb in $CPU_NBS; do run_one "$nb" cpu --set "threads=$THREADS" & done
if [ "$PROBES" = 1 ]; then
  (for p in "fig8 11511784" "fig2 24"; do
     DEVICE=$DEVICE timeout "$LIMIT" $PY benchmarks/eden_paper_probes.py $p 2>&1
   done > _build/gpu-logs/eden_probes.log) &
  for nb in $PROBE_NBS; do
    tag=$(echo "$nb" | tr '/' '-')
    case "$nb" in  # the count parameters each notebook's time grows with (device "auto": CUDA where present)
      eden/05*) scale="fig3_rounds fig13_rounds fig14_rounds" ;;
      eden/02*) scale="fig8_reps" ;;
      eden/01*) scale="fig2_trials fig5_trials" ;;
      *) scale=${PROBE_SCALE:?PROBE_SCALE: the count parameters of $nb} ;;
    esac
    (timeout "$LIMIT" $PY benchmarks/paper_time.py "$nb" --scale $scale \
       --fractions $PROBE_FRACTIONS --data-dir "$DATA_DIR" > "_build/gpu-logs/paper_time-$tag.log" 2>&1) &
  done
fi
if [ "$CHECK" = 1 ] && [ -f benchmarks/gpu_check.sh ]; then
  (OUT=_build/gpu-logs/check MOL_EPOCHS=0 bash benchmarks/gpu_check.sh > _build/gpu-logs/gpu_check.log 2>&1) &
fi
wait
echo "=== done after $((SECONDS - t0)) s"
cat _build/gpu-logs/summary.log
ls -d archive/"$PROFILE"/*/* 2>/dev/null
dirs=()  # only this run's entries (the tree may carry others, which stay as they are)
for nb in $GPU_NBS $CPU_NBS; do for d in archive/"$PROFILE"/"$nb"*; do [ -d "$d" ] && dirs+=("$d"); done; done
[ ${#dirs[@]} -gt 0 ] && tar czf "$OUT/archive.tgz" "${dirs[@]}"
units=$(ls -d _build/gpu-*/_results/*/*/.units 2>/dev/null)
[ -n "$units" ] && tar czf "$OUT/units.tgz" $units && echo "=== units packed into \$OUT/units.tgz: $(du -sh "$OUT/units.tgz" | cut -f1)"
tar czf "$OUT/logs.tgz" _build/gpu-logs $(ls -d _build/gpu-*/.tmp _build/gpu-*/.failed _build/gpu-*/.stamps 2>/dev/null)
for f in _build/gpu-logs/eden_probes.log _build/gpu-logs/paper_time-*.log; do [ -f "$f" ] && { echo "=== $f"; cat "$f"; }; done
for f in _build/gpu-*/.stamps; do [ -d "$f" ] && find "$f" -name '*.json' -exec cat {} \; -exec echo \; ; done
