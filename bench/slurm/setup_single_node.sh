#!/bin/bash
# Start a single-node SLURM cluster on this host, all of its state in one folder
# (but munge's socket, see 1.).
#
#   bench/slurm/setup_single_node.sh STATE_DIR [--accounting]
#   . STATE_DIR/env.sh          # SLURM_CONF for sinfo, sbatch, sacct, ...
#   bench/slurm/teardown.sh STATE_DIR
#
# What it does, in order:
#   1. munged, with its own key, pid, log and seed under STATE_DIR/munge, on
#      munge's default socket (MUNGE_SOCKET to change it)
#      (run as root with --force: a container has no munge service to start);
#   2. with --accounting: a MariaDB server on 127.0.0.1 (data under
#      STATE_DIR/mysql) and slurmdbd in front of it, so that sacct works;
#   3. STATE_DIR/etc/slurm.conf from slurm.conf.in next to this script: the
#      node line is `slurmd -C`'s (the host's real CPUs and memory),
#      proctrack/linuxproc, task/none, no cgroups, select/cons_tres;
#   4. slurmctld and slurmd, started directly (they daemonize themselves:
#      no systemd is needed, and this container has none: PID 1 is not
#      systemd, so `systemctl start` cannot work);
#   5. waits until `sinfo` shows the node idle.
#
# Re-runnable: daemons still running from STATE_DIR are stopped first
# (teardown.sh), the munge key, database and slurmctld state are kept.
# Must run as root (the daemons run as root; jobs run as the submitting
# user: only root submitted in bench/README.md's runs). Ports:
# SLURM_PORT_BASE (default 6817): slurmctld, +1 slurmd, +2 slurmdbd,
# +3 MariaDB.
set -euo pipefail

usage() { echo "usage: $0 STATE_DIR [--accounting]" >&2; exit 2; }
[ $# -ge 1 ] || usage
STATE=$1; shift
ACCOUNTING=0
for arg in "$@"; do
    case $arg in
        --accounting) ACCOUNTING=1 ;;
        *) usage ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "$0: run as root (the daemons run as root)" >&2; exit 1; }
for tool in munged munge unmunge slurmctld slurmd sinfo scontrol; do
    command -v $tool >/dev/null || {
        echo "$0: $tool not found: apt-get install slurm-wlm munge" >&2; exit 1; }
done
if [ $ACCOUNTING = 1 ]; then
    for tool in slurmdbd sacctmgr mariadbd mariadb mariadb-install-db; do
        command -v $tool >/dev/null || {
            echo "$0: $tool not found: apt-get install slurmdbd mariadb-server" >&2; exit 1; }
    done
fi

HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$STATE"
STATE=$(cd "$STATE" && pwd)
BASE=${SLURM_PORT_BASE:-6817}
CTLD_PORT=$BASE; SLURMD_PORT=$((BASE + 1)); DBD_PORT=$((BASE + 2)); DB_PORT=$((BASE + 3))
HOST=$(hostname -s)
CLUSTER=${SLURM_CLUSTER_NAME:-ultrafs}
PARTITION=${SLURM_PARTITION:-debug}
MUNGE_DIR=$STATE/munge
# munge's default socket: sacctmgr's connection to slurmdbd ignores
# slurm.conf's AuthInfo=socket= (22.05.8: "Munge encode failed: Failed to
# access /run/munge/munge.socket.2"), so only the default serves every client
MUNGE_SOCKET=${MUNGE_SOCKET:-/run/munge/munge.socket.2}

"$HERE/teardown.sh" "$STATE" --quiet
mkdir -p "$STATE"/{etc,log,run,spool/slurmctld,spool/slurmd} "$MUNGE_DIR"
chmod 755 "$MUNGE_DIR"   # the socket must be reachable by every user; the key stays 0400

# wait_for SECONDS WHAT COMMAND...: poll COMMAND every 0.5 s
wait_for() {
    local seconds=$1 what=$2; shift 2
    local deadline=$((SECONDS + seconds))
    until "$@" >/dev/null 2>&1; do
        if [ $SECONDS -ge $deadline ]; then
            echo "$0: $what not ready after ${seconds}s" >&2
            return 1
        fi
        sleep 0.5
    done
}

# 1. munge
mkdir -p "$(dirname "$MUNGE_SOCKET")"
chmod 755 "$(dirname "$MUNGE_SOCKET")"
if [ -S "$MUNGE_SOCKET" ] && munge -n -S "$MUNGE_SOCKET" >/dev/null 2>&1; then
    echo "$0: a munged not started from $STATE answers on $MUNGE_SOCKET;" \
         "stop it or set MUNGE_SOCKET" >&2
    exit 1
fi
if [ ! -s "$MUNGE_DIR/munge.key" ]; then
    if command -v mungekey >/dev/null; then
        mungekey --create --keyfile="$MUNGE_DIR/munge.key"
    else
        dd if=/dev/urandom of="$MUNGE_DIR/munge.key" bs=1024 count=1 status=none
    fi
fi
chmod 400 "$MUNGE_DIR/munge.key"
munged --force --key-file="$MUNGE_DIR/munge.key" --socket="$MUNGE_SOCKET" \
    --pid-file="$STATE/run/munged.pid" --log-file="$STATE/log/munged.log" \
    --seed-file="$MUNGE_DIR/munged.seed"
munge_ok() { munge -n -S "$MUNGE_SOCKET" | unmunge -S "$MUNGE_SOCKET"; }
wait_for 20 munged munge_ok
echo "munged: up ($MUNGE_SOCKET)"

# 2. accounting
ACCOUNTING_LINES="AccountingStorageType=accounting_storage/none"
if [ $ACCOUNTING = 1 ]; then
    DB=$STATE/mysql
    if [ ! -d "$DB/mysql" ]; then
        mariadb-install-db --user=root --datadir="$DB" --skip-test-db \
            --auth-root-authentication-method=socket > "$STATE/log/mariadb-install.log" 2>&1
    fi
    # mariadbd does not daemonize: start it in the background, detached
    setsid mariadbd --user=root --datadir="$DB" --bind-address=127.0.0.1 \
        --port=$DB_PORT --socket="$STATE/run/mysqld.sock" \
        --pid-file="$STATE/run/mariadbd.pid" --log-error="$STATE/log/mariadbd.log" \
        </dev/null >/dev/null 2>&1 &
    wait_for 60 mariadbd mariadb --socket="$STATE/run/mysqld.sock" -e "select 1"
    if [ ! -s "$STATE/etc/db.pass" ]; then
        (umask 077; head -c 18 /dev/urandom | base64 | tr -d '/+=' > "$STATE/etc/db.pass")
    fi
    DB_PASS=$(cat "$STATE/etc/db.pass")
    mariadb --socket="$STATE/run/mysqld.sock" <<SQL
CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
SQL
    (umask 077; sed -e "s|@STATE@|$STATE|g" -e "s|@MUNGE_SOCKET@|$MUNGE_SOCKET|g" \
        -e "s|@DBD_PORT@|$DBD_PORT|g" -e "s|@DB_PORT@|$DB_PORT|g" -e "s|@DB_PASS@|$DB_PASS|g" \
        "$HERE/slurmdbd.conf.in" > "$STATE/etc/slurmdbd.conf")
    chmod 600 "$STATE/etc/slurmdbd.conf"
    # slurmdbd has no option for its file: it reads slurmdbd.conf from the
    # folder of $SLURM_CONF
    SLURM_CONF=$STATE/etc/slurm.conf slurmdbd
    dbd_ok() { (exec 3<>/dev/tcp/127.0.0.1/$DBD_PORT); }
    wait_for 60 slurmdbd dbd_ok
    echo "slurmdbd: up (port $DBD_PORT, MariaDB on 127.0.0.1:$DB_PORT)"
    ACCOUNTING_LINES="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$DBD_PORT
JobCompType=jobcomp/none"
fi

# 3. slurm.conf: the node's real CPUs and memory, as slurmd reports them
NODE_LINE=$(slurmd -C | head -n 1)
case $NODE_LINE in NodeName=*) ;; *) echo "$0: slurmd -C said: $NODE_LINE" >&2; exit 1 ;; esac
NODE=${NODE_LINE%% *}; NODE=${NODE#NodeName=}
CPUS=$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$NODE_LINE")
MEM=$(sed -n 's/.* RealMemory=\([0-9]*\).*/\1/p' <<<"$NODE_LINE")
# jobs that give no --mem get their share of the memory per CPU, halved,
# so that a job without --mem never holds the whole node
DEF_MEM=$((MEM / CPUS / 2))
# OverSubscribe=YES:2: a job that asks --oversubscribe may share a core with
# one other such job; every other job gets its cores to itself
OVERSUBSCRIBE=${SLURM_OVERSUBSCRIBE:-YES:2}
python3 - "$HERE/slurm.conf.in" "$STATE/etc/slurm.conf" <<PY
import sys
text = open(sys.argv[1]).read()
values = {"CLUSTER": "$CLUSTER", "HOST": "$HOST", "CTLD_PORT": "$CTLD_PORT",
          "SLURMD_PORT": "$SLURMD_PORT", "MUNGE_SOCKET": "$MUNGE_SOCKET",
          "STATE": "$STATE", "ACCOUNTING": """$ACCOUNTING_LINES""",
          "NODE_LINE": "$NODE_LINE", "NODE": "$NODE", "PARTITION": "$PARTITION",
          "OVERSUBSCRIBE": "$OVERSUBSCRIBE", "DEF_MEM_PER_CPU": "$DEF_MEM"}
for name, value in values.items():
    text = text.replace("@" + name + "@", value)
import re
assert not re.search(r"@[A-Z_]+@", text), "unreplaced template names"
open(sys.argv[2], "w").write(text)
PY
export SLURM_CONF=$STATE/etc/slurm.conf
cat > "$STATE/env.sh" <<EOF
# . this file: the SLURM clients (sinfo, sbatch, squeue, scancel, sacct)
# then talk to the cluster under $STATE
export SLURM_CONF=$SLURM_CONF
EOF

# 4. slurmctld, then slurmd (both fork into the background themselves)
if [ $ACCOUNTING = 1 ]; then
    # the cluster must exist in the database before slurmctld registers
    if ! sacctmgr -n -P show cluster format=cluster | grep -qx "$CLUSTER"; then
        sacctmgr -i add cluster "$CLUSTER" >/dev/null
    fi
fi
slurmctld -f "$SLURM_CONF"
wait_for 30 slurmctld scontrol ping
slurmd -f "$SLURM_CONF"

# 5. the node idle
node_state() { sinfo -h -n "$NODE" -o %T | head -n 1; }
deadline=$((SECONDS + 60))
while :; do
    state=$(node_state || true)
    case $state in
        idle) break ;;
        down*|drain*)
            scontrol update nodename="$NODE" state=resume 2>/dev/null || true ;;
    esac
    if [ $SECONDS -ge $deadline ]; then
        echo "$0: node $NODE is '$state' after 60s; see $STATE/log/slurmd.log" >&2
        scontrol show node "$NODE" >&2 || true
        exit 1
    fi
    sleep 0.5
done
echo "slurmctld, slurmd: up; SLURM_CONF=$SLURM_CONF"
sinfo -N -o "%N %P %T %c %m"
