#!/bin/bash
# Stop the daemons that setup_single_node.sh started from STATE_DIR.
#
#   bench/slurm/teardown.sh STATE_DIR [--quiet] [--purge]
#
# Each daemon is stopped by the pid in its pid file under STATE_DIR/run,
# and only when that pid still runs the daemon named (a pid reused by
# another process is left alone): SIGTERM, then SIGKILL after 20 s. Jobs
# still running are killed with the cluster (scancel first for a clean
# end). --purge also deletes STATE_DIR (key, database, logs, state).
set -uo pipefail

[ $# -ge 1 ] || { echo "usage: $0 STATE_DIR [--quiet] [--purge]" >&2; exit 2; }
STATE=$1; shift
QUIET=0; PURGE=0
for arg in "$@"; do
    case $arg in
        --quiet) QUIET=1 ;;
        --purge) PURGE=1 ;;
        *) echo "usage: $0 STATE_DIR [--quiet] [--purge]" >&2; exit 2 ;;
    esac
done
[ -d "$STATE" ] || exit 0
say() { [ $QUIET = 1 ] || echo "$@"; }

# stop NAME: the daemon whose pid is in STATE/run/NAME.pid
stop() {
    local name=$1 file=$STATE/run/$1.pid pid comm
    [ -s "$file" ] || return 0
    pid=$(tr -dc 0-9 < "$file")
    comm=$(ps -o comm= -p "$pid" 2>/dev/null || true)
    if [ -z "$pid" ] || [ "$comm" != "$name" ]; then
        rm -f "$file"
        return 0
    fi
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 40); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.5
    done
    if kill -0 "$pid" 2>/dev/null; then
        say "$name ($pid) still running after 20s: SIGKILL"
        kill -KILL "$pid" 2>/dev/null
    fi
    rm -f "$file"
    say "stopped $name ($pid)"
}

# the order matters: slurmd and slurmctld before slurmdbd (they report
# to it), slurmdbd before its database, munged last (all of them use it)
stop slurmd
stop slurmctld
stop slurmdbd
stop mariadbd
stop munged
if [ $PURGE = 1 ]; then
    rm -rf "$STATE"
    say "removed $STATE"
fi
exit 0
