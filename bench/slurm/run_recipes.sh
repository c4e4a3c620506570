#!/bin/bash
# Run the SLURM recipes of docs/CLUSTERS.md against a real SLURM controller
# and check that every model is the uninterrupted threaded run's, bit for bit.
#
#   bench/slurm/setup_single_node.sh /tmp/slurm_state --accounting
#   . /tmp/slurm_state/env.sh
#   bench/slurm/run_recipes.sh WORK_DIR
#
# (a) one node: `sbatch` of the one-node job script (threaded scheduler,
#     --checkpoint, --resume, --requeue); cancelled with `scancel` once the
#     checkpoint holds CANCEL_AFTER iterations, submitted again (the same
#     script: --resume continues from the checkpoint), its model compared
#     with the threaded reference run outside SLURM;
# (b) several nodes: a driver job (driver.py) that starts WORKER_JOBS Dask
#     workers as SLURM jobs through dask-jobqueue's SLURMCluster and runs
#     the same selection on them, its model compared with the reference.
# Then sacct's lines for every job (when the cluster has accounting).
#
# Environment: DATA (a LIBSVM file, default imdb_train_unigram_binary),
# SELECT (the selection's options), CANCEL_AFTER (default 5), WORKER_JOBS
# (default 2), PYTHON (default: python3 on PATH, which must import ultrafs
# and, for (b), dask_jobqueue). ultrafs is imported from the tree this
# script is in (PYTHONPATH), in the jobs too.
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: $0 WORK_DIR" >&2; exit 2; }
[ -n "${SLURM_CONF:-}" ] || echo "$0: SLURM_CONF is not set: using the system's slurm.conf" >&2
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
mkdir -p "$1"
WORK=$(cd "$1" && pwd)
PYTHON=${PYTHON:-$(command -v python3)}
DATA=${DATA:-/work/shared/data/imdb_train_unigram_binary.svm.bz2}
SELECT=${SELECT:---B 10 --max-iter 40 --block-size 5000}
CANCEL_AFTER=${CANCEL_AFTER:-5}
WORKER_JOBS=${WORKER_JOBS:-2}
export PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH}
ULTRAFS=("$PYTHON" -c "from ultrafs.cli import main; main()")
STORE=$WORK/store.zarr
JOBS=()

log() { echo "[$(date +%H:%M:%S)] $*"; }
job_state() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
# wait_job ID STATE...: until the job is in one of the states (5 min at most)
wait_job() {
    local id=$1 state; shift
    for _ in $(seq 1500); do
        state=$(job_state "$id")
        for want in "$@"; do [ "$state" = "$want" ] && return 0; done
        sleep 0.2
    done
    echo "$0: job $id is '$state', not $* after 5 min" >&2
    return 1
}
checkpoint_iteration() {
    "$PYTHON" -c 'import json, sys
try:
    print(json.load(open(sys.argv[1]))["iteration"])
except (OSError, ValueError, KeyError):
    print(0)' "$1"
}
same_model() {
    "$PYTHON" "$HERE/same_model.py" "$@"
}

log "ultrafs from $("$PYTHON" -c 'import ultrafs; print(ultrafs.__file__)')"
log "sinfo: $(sinfo -h -o '%P %T %c CPUs %m MB' | tr '\n' ' ')"
if [ ! -d "$STORE" ]; then
    log "ingest $DATA"
    "${ULTRAFS[@]}" ingest "$DATA" "$STORE" > "$WORK/ingest.json"
fi

log "reference: the threaded scheduler, no SLURM, no checkpoint"
start=$(date +%s.%N)
# shellcheck disable=SC2086
"${ULTRAFS[@]}" select --data "$STORE" $SELECT --out "$WORK/model_threads.json" \
    2> "$WORK/threads.err"
log "reference: $(awk "BEGIN {printf \"%.1f\", $(date +%s.%N) - $start}") s"

# (a) the one-node job script, cancelled and submitted again
rm -rf "$WORK/ckpt" "$WORK/model_sbatch.json"
cat > "$WORK/select.sbatch" <<EOF
#!/bin/bash
#SBATCH --job-name=ultrafs --cpus-per-task=2 --mem=4G --time=00:10:00
#SBATCH --requeue
#SBATCH --output=$WORK/select-%j.out
export PYTHONPATH=$PYTHONPATH
"$PYTHON" -c "from ultrafs.cli import main; main()" select --data $STORE $SELECT --workers 2 \\
    --checkpoint $WORK/ckpt --resume --out $WORK/model_sbatch.json --progress
EOF
first=$(sbatch --parsable "$WORK/select.sbatch")
JOBS+=("$first")
log "(a) submitted job $first"
wait_job "$first" RUNNING COMPLETED FAILED
for _ in $(seq 3000); do
    done_iterations=$(checkpoint_iteration "$WORK/ckpt/checkpoint.json")
    [ "$done_iterations" -ge "$CANCEL_AFTER" ] && break
    [ "$(job_state "$first")" = RUNNING ] || break
    sleep 0.1
done
scancel "$first"
log "(a) scancel $first with the checkpoint at iteration $done_iterations"
wait_job "$first" CANCELLED COMPLETED FAILED
log "(a) job $first: $(job_state "$first"); checkpoint at iteration" \
    "$(checkpoint_iteration "$WORK/ckpt/checkpoint.json");" \
    "model written: $([ -e "$WORK/model_sbatch.json" ] && echo yes || echo no)"
second=$(sbatch --parsable "$WORK/select.sbatch")
JOBS+=("$second")
log "(a) submitted the same script again: job $second"
wait_job "$second" COMPLETED FAILED CANCELLED TIMEOUT OUT_OF_MEMORY
log "(a) job $second: $(job_state "$second")"
grep -h -E "resuming|Terminated|interrupted|signal" "$WORK/select-$first.out" \
    "$WORK/select-$second.out" || true
same_model "$WORK/model_threads.json" "$WORK/model_sbatch.json" | tee "$WORK/same_a.json"

# (b) the driver job: Dask workers as SLURM jobs (dask-jobqueue)
rm -rf "$WORK/ckpt_dask" "$WORK/model_dask.json"
select_api=$("$PYTHON" - $SELECT <<'PY'
import sys
args = sys.argv[1:]
pairs = [(args[i].lstrip("-").replace("-", "_"), args[i + 1]) for i in range(0, len(args), 2)]
print(" ".join(f"{k}={v}" for k, v in pairs))
PY
)
driver=$(sbatch --parsable --job-name=ultrafs-driver --cpus-per-task=1 --mem=2G \
    --oversubscribe --time=00:15:00 --output="$WORK/driver-%j.out" \
    --wrap "export PYTHONPATH=$PYTHONPATH; exec '$PYTHON' '$HERE/driver.py' '$STORE' \
        '$WORK/model_dask.json' --jobs $WORKER_JOBS --cores 1 --memory 2GB \
        --oversubscribe --checkpoint '$WORK/ckpt_dask' --log-directory '$WORK/dask-logs' \
        --select $select_api")
JOBS+=("$driver")
log "(b) submitted driver job $driver"
wait_job "$driver" COMPLETED FAILED CANCELLED TIMEOUT OUT_OF_MEMORY
log "(b) driver job $driver: $(job_state "$driver")"
cat "$WORK/driver-$driver.out"
same_model "$WORK/model_threads.json" "$WORK/model_dask.json" | tee "$WORK/same_b.json"

if sacct -n -j "${JOBS[0]}" >/dev/null 2>&1; then
    sleep 2   # let slurmctld send the last records to slurmdbd
    start_time=$(date -d '-1 hour' +%Y-%m-%dT%H:%M:%S)
    sacct -S "$start_time" --format=JobID,JobName%16,State,ExitCode,Elapsed,AllocCPUS,ReqMem,MaxRSS \
        | awk -v first="${JOBS[0]}" 'NR <= 2 || $1 + 0 >= first + 0'
else
    log "no accounting (setup_single_node.sh without --accounting): no sacct lines"
fi
