#!/usr/bin/env bash
# The checks that need a CUDA GPU, in one run of about 8 minutes (an H100/H200): what a GPU owner
# runs after installing, and what we run when a GPU machine is lent to us.
#
#   1. benchmarks/bench_fl.py on CUDA: the batched federated engine against the per-client loop
#      (issue 13's goal: >= 5x at 10 clients per round), EDEN vs uncompressed rounds/s, the wire format;
#   2. benchmarks/bench_molecules.py on CUDA: the molecular study's paper profile, measured per task
#      and embedder at MOL_EPOCHS epochs and scaled to 500 (issue 12's time target);
#   3. the tests that exercise device="auto" (CUDA here) and the two CUDA-only tests.
#
#   DATA_DIR=../shared/data OUT=gpu_out bash benchmarks/gpu_check.sh
#
# Each part has its own time limit, and its log is written to $OUT as it runs.
set -u
OUT=${OUT:-gpu_out}
DATA_DIR=${DATA_DIR:-${QLIB_DATA_DIR:-../shared/data}}
PY=${PY:-python3}
MOL_EPOCHS=${MOL_EPOCHS:-40}     # 0: leave part 2 out
PYTEST_K=${PYTEST_K:-not compiled}  # the numba backends are CPU code: tested by CI
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 QLIB_DATA_DIR="$DATA_DIR" PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export QLIB_CACHE_DIR=${QLIB_CACHE_DIR:-$(mktemp -d)}
t0=$SECONDS
part() { echo; echo "=== $1 (at $((SECONDS - t0)) s)"; }

part "machine"
nvidia-smi -L 2>&1 | head -4
$PY -c "import torch, numpy, numba; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0), '| numpy', numpy.__version__, '| numba', numba.__version__)" 2>&1 | tee "$OUT/machine.log"

part "federated engine (bench_fl.py)"
timeout 100 $PY benchmarks/bench_fl.py --device cuda --rounds 5 --repeat 3 --data-dir "$DATA_DIR" 2>&1 | tee "$OUT/fl.log"

if [ "$MOL_EPOCHS" -gt 0 ]; then
    part "molecular paper profile (bench_molecules.py --measure $MOL_EPOCHS)"
    sizes=()   # a machine without PyTDC reads the task sizes from tdc_sizes.json (bench_molecules.py --write-sizes)
    [ -f "$DATA_DIR/tdc_sizes.json" ] && sizes=(--sizes "$DATA_DIR/tdc_sizes.json")
    timeout 200 $PY benchmarks/bench_molecules.py --device cuda --skip-embed --measure "$MOL_EPOCHS" --epochs 20 \
        --train-n 2000 --data-dir "$DATA_DIR" "${sizes[@]}" 2>&1 | tee "$OUT/molecules.log"
fi

part "tests on CUDA"
timeout 150 $PY -m pytest -q -p no:cacheprovider -k "$PYTEST_K" --junitxml="$OUT/tests.xml" \
    tests/test_engine.py tests/test_quantizers.py tests/test_fl.py tests/test_dpsgd.py \
    tests/test_discriminator.py tests/test_wire.py tests/test_eden.py 2>&1 | tail -40 | tee "$OUT/tests.log"

part "done"
