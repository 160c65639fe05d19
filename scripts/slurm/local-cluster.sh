#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for tests: munged, slurmctld and
# slurmd (Debian's slurm-wlm and munge), everything under DIR, on free ports.
#   scripts/slurm/local-cluster.sh start DIR   # prints the SLURM_CONF to export
#   scripts/slurm/local-cluster.sh stop DIR
#   scripts/slurm/local-cluster.sh run DIR COMMAND...   # start, run, stop
# Exits 2, saying why, where Slurm cannot start (not installed, not root).
set -euo pipefail

command=${1:?usage: local-cluster.sh start|stop DIR}
dir=$(mkdir -p "${2:?usage: local-cluster.sh start|stop DIR}" && cd "$2" && pwd)

cannot() { echo "local-cluster: cannot start Slurm: $*" >&2; exit 2; }

if [ "$command" = run ]; then
  shift 2
  export SLURM_CONF
  SLURM_CONF=$("$0" start "$dir")
  trap '"$0" stop "$dir"' EXIT
  "$@"
  exit
fi

if [ "$command" = stop ]; then
  for daemon in slurmd slurmctld munged; do
    [ -f "$dir/$daemon.pid" ] && kill "$(cat "$dir/$daemon.pid")" 2>/dev/null || true
  done
  exit 0
fi

for program in munged mungekey slurmctld slurmd sbatch; do
  command -v "$program" > /dev/null || PATH=$PATH:/usr/sbin command -v "$program" > /dev/null ||
    cannot "$program is not installed (Debian: slurm-wlm, munge)"
done
export PATH=$PATH:/usr/sbin
[ "$(id -u)" -eq 0 ] || cannot "slurmd must run as root"

free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
host=$(hostname -s)
mkdir -p "$dir/state" "$dir/spool"
mungekey --create --keyfile="$dir/munge.key" --force 2> /dev/null
chmod 600 "$dir/munge.key"
munged --force --socket="$dir/munge.socket" --key-file="$dir/munge.key" \
  --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge.seed" ||
  cannot "munged did not start (see $dir/munged.log)"

cat > "$dir/slurm.conf" <<CONF
ClusterName=tfmc-test
SlurmctldHost=$host
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$dir/slurm.conf
slurmctld -f "$SLURM_CONF" || cannot "slurmctld did not start (see $dir/slurmctld.log)"
slurmd -f "$SLURM_CONF" || cannot "slurmd did not start (see $dir/slurmd.log)"
# Up when the node takes jobs.
for _ in $(seq 60); do
  if sinfo -h -o %t 2> /dev/null | grep -qE '^idle'; then
    echo "$SLURM_CONF"
    exit 0
  fi
  sleep 0.5
done
cannot "the node did not become idle (see $dir/slurmctld.log, $dir/slurmd.log)"
