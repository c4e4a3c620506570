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
# (c) the job script requeued by SLURM (`scontrol requeue`, what a
#     preemption or a node failure does) mid-run: the same job runs again
#     and --resume continues (REQUEUE=0 skips it: it waits ~2.5 min).
# (d) the driver job when its worker jobs wait in the queue (--begin=now+90)
#     past ultrafs's worker timeout (60 s): without client.wait_for_workers
#     the selection fails; with it, the same model (PENDING=0 skips it).
# Then sacct's lines for every job and every run of a requeued one (when
# the cluster has accounting). Exit
# status 0 only when every model is identical to the reference.
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
# the `ultrafs` command next to PYTHON (the recipes' own command; with
# PYTHONPATH it runs this tree), else the same through PYTHON
if [ -x "$(dirname "$PYTHON")/ultrafs" ]; then
    ULTRAFS=("$(dirname "$PYTHON")/ultrafs")
else
    ULTRAFS=("$PYTHON" -c "from ultrafs.cli import main; main()")
fi
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

log "ultrafs from $("$PYTHON" -c 'import ultrafs; print(ultrafs.__file__)'); command: ${ULTRAFS[*]}"
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

# job_script NAME: the one-node job script (docs/CLUSTERS.md), its
# checkpoint WORK/ckpt_NAME, its model WORK/model_NAME.json; --open-mode=append
# keeps the log of every run of a requeued job (SLURM truncates it otherwise)
job_script() {
    cat > "$WORK/$1.sbatch" <<EOF
#!/bin/bash
#SBATCH --job-name=ultrafs-$1 --cpus-per-task=2 --mem=4G --time=00:10:00
#SBATCH --requeue --open-mode=append
#SBATCH --output=$WORK/$1-%j.out
export PYTHONPATH=$PYTHONPATH
${ULTRAFS[*]@Q} select --data $STORE $SELECT --workers 2 \\
    --checkpoint $WORK/ckpt_$1 --resume --out $WORK/model_$1.json --progress
EOF
    rm -rf "$WORK/ckpt_$1" "$WORK/model_$1.json"
    echo "$WORK/$1.sbatch"
}
# interrupt JOB CHECKPOINT_DIR COMMAND...: once the job's checkpoint holds
# CANCEL_AFTER iterations, run COMMAND JOB (scancel, scontrol requeue)
interrupt() {
    local job=$1 ckpt=$2 done_iterations=0; shift 2
    wait_job "$job" RUNNING COMPLETED FAILED
    for _ in $(seq 3000); do
        done_iterations=$(checkpoint_iteration "$ckpt/checkpoint.json")
        [ "$done_iterations" -ge "$CANCEL_AFTER" ] && break
        [ "$(job_state "$job")" = RUNNING ] || break
        sleep 0.1
    done
    "$@" "$job"
    log "$* $job with the checkpoint at iteration $done_iterations"
}
STATUS=0
check() {   # check NAME MODEL: the same model as the reference?
    same_model "$WORK/model_threads.json" "$2" > "$WORK/same_$1.json" || STATUS=1
    cat "$WORK/same_$1.json"
}

# (a) cancelled with scancel, then the same script submitted again
script=$(job_script cancel)
first=$(sbatch --parsable "$script")
JOBS+=("$first")
log "(a) submitted job $first"
interrupt "$first" "$WORK/ckpt_cancel" scancel
wait_job "$first" CANCELLED COMPLETED FAILED
log "(a) job $first: $(job_state "$first"); checkpoint at iteration" \
    "$(checkpoint_iteration "$WORK/ckpt_cancel/checkpoint.json");" \
    "model written: $([ -e "$WORK/model_cancel.json" ] && echo yes || echo no)"
second=$(sbatch --parsable "$script")
JOBS+=("$second")
log "(a) submitted the same script again: job $second"
wait_job "$second" COMPLETED FAILED CANCELLED TIMEOUT OUT_OF_MEMORY
log "(a) job $second: $(job_state "$second")"
grep -h -E "resuming|SIGTERM|CANCELLED" "$WORK/cancel-$first.out" "$WORK/cancel-$second.out" || true
check a "$WORK/model_cancel.json"

# (c) requeued by SLURM (what a preemption or a node failure does): the job
# runs again under the same id once eligible (cred_expire, 120 s by default)
if [ "${REQUEUE:-1}" = 1 ]; then
    script=$(job_script requeue)
    job=$(sbatch --parsable "$script")
    JOBS+=("$job")
    log "(c) submitted job $job"
    interrupt "$job" "$WORK/ckpt_requeue" scontrol requeue
    wait_job "$job" PENDING
    log "(c) job $job: $(scontrol show job "$job" | grep -o -E 'Restarts=[0-9]+|EligibleTime=[^ ]+' | tr '\n' ' ')"
    wait_job "$job" COMPLETED FAILED CANCELLED TIMEOUT OUT_OF_MEMORY
    log "(c) job $job: $(job_state "$job")"
    grep -h -E "resuming|SIGTERM|CANCELLED" "$WORK/requeue-$job.out" || true
    check c "$WORK/model_requeue.json"
fi

# (b) the driver job: Dask workers as SLURM jobs (dask-jobqueue)
rm -rf "$WORK/ckpt_dask" "$WORK/model_dask.json"
select_api=$("$PYTHON" - $SELECT <<'PY'
import sys
args = sys.argv[1:]
pairs = [(args[i].lstrip("-").replace("-", "_"), args[i + 1]) for i in range(0, len(args), 2)]
print(" ".join(f"{k}={v}" for k, v in pairs))
PY
)
# driver_job NAME ARGS...: submit driver.py as a job, wait for its end
driver_job() {
    local name=$1; shift
    rm -rf "$WORK/ckpt_$name" "$WORK/model_$name.json"
    driver=$(sbatch --parsable --job-name="ultrafs-$name" --cpus-per-task=1 --mem=2G \
        --oversubscribe --time=00:15:00 --output="$WORK/$name-%j.out" \
        --wrap "export PYTHONPATH=$PYTHONPATH; exec '$PYTHON' '$HERE/driver.py' '$STORE' \
            '$WORK/model_$name.json' --jobs $WORKER_JOBS --cores 1 --memory 2GB \
            --oversubscribe --checkpoint '$WORK/ckpt_$name' --log-directory '$WORK/dask-logs' \
            $* --select $select_api")
    JOBS+=("$driver")
    log "submitted driver job $driver ($name $*)"
    wait_job "$driver" COMPLETED FAILED CANCELLED TIMEOUT OUT_OF_MEMORY
    log "driver job $driver: $(job_state "$driver")"
    cat "$WORK/$name-$driver.out"
}
driver_job dask
check b "$WORK/model_dask.json"

# (d) worker jobs that wait in the queue longer than ultrafs's worker
# timeout (60 s): the recipe as docs/CLUSTERS.md had it (no wait) fails;
# waiting for one worker first runs to the same model
if [ "${PENDING:-1}" = 1 ]; then
    driver_job nowait --begin 90 --wait-for 0 || true
    grep -q "^ultrafs: " "$WORK/nowait-$driver.out" \
        && log "(d) without a wait: failed as expected" \
        || { log "(d) without a wait: did not fail"; STATUS=1; }
    driver_job wait1 --begin 90 --wait-for 1
    check d "$WORK/model_wait1.json"
fi

if sacct -n -j "${JOBS[0]}" >/dev/null 2>&1; then
    sleep 2   # let slurmctld send the last records to slurmdbd
    start_time=$(date -d '-1 hour' +%Y-%m-%dT%H:%M:%S)
    sacct --duplicates -S "$start_time" --format=JobID,JobName%16,State,ExitCode,Elapsed,AllocCPUS,ReqMem,MaxRSS \
        | awk -v first="${JOBS[0]}" 'NR <= 2 || $1 + 0 >= first + 0'
else
    log "no accounting (setup_single_node.sh without --accounting): no sacct lines"
fi
if [ $STATUS = 0 ]; then
    log "every model is the threaded run's, bit for bit"
else
    log "a model differs from the threaded run's (same_*.json)"
fi
exit $STATUS
