#!/usr/bin/env bash
# The one-node Slurm cluster of the Slurm tests (test/slurm): Debian's
# slurm-wlm and munge, started directly (no systemd): munged, slurmctld and
# slurmd on this host, one partition "debug" holding this node. Accounting
# has no database: accounting_storage/none, and job completions go to a text
# file (jobcomp/filetxt, readable by every user), which stockade's sacct
# reads for the jobs it submitted.
#
# Usage: scripts/slurm.sh up|down|status (root for up and down; every
# command is idempotent). `up` generates a munge key when there is none and
# writes /etc/slurm/slurm.conf marked as ours; `down` stops the daemons and
# removes only a slurm.conf that carries our mark, the state and the job
# completion log (job ids start again at 1).
set -euo pipefail

conf=/etc/slurm/slurm.conf
mark="# written by stockade scripts/slurm.sh"
state=/var/lib/stockade-slurm
logs=/var/log/stockade-slurm
jobcomp=$logs/jobcomp.log
node=$(hostname -s)

pid_of() { # NAME PIDFILE: the pid when it is still that daemon
	local pid
	pid=$(cat "$2" 2>/dev/null) || return 1
	[ -n "$pid" ] && [ "$(basename "$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | head -n1)")" = "$1" ] || return 1
	echo "$pid"
}

status() {
	local ok=0
	if pid=$(pid_of munged /run/munge/munged.pid); then echo "munged: pid $pid"; else echo "munged: not running"; ok=1; fi
	if pid=$(pid_of slurmctld /run/stockade-slurmctld.pid); then echo "slurmctld: pid $pid"; else echo "slurmctld: not running"; ok=1; fi
	if pid=$(pid_of slurmd /run/stockade-slurmd.pid); then echo "slurmd: pid $pid"; else echo "slurmd: not running"; ok=1; fi
	if [ $ok = 0 ]; then
		if out=$(timeout 10 sinfo -h -p debug -o '%P %a %T' 2>&1) && grep -qE '^debug\*? up (idle|mixed|allocated)' <<<"$out"; then
			echo "partition: $out"
		else
			echo "partition debug: not ready (${out:-no answer})"; ok=1
		fi
	fi
	return $ok
}

write_conf() {
	local cpus mem cgplugin=cgroup/v2
	# A hybrid hierarchy (v1 controllers beside the unified one) takes v1.
	grep -q '^[1-9][0-9]*:' /proc/self/cgroup && cgplugin=cgroup/v1
	cpus=$(nproc)
	mem=$(awk '/MemTotal/ { print int($2 / 1024 * 0.8) }' /proc/meminfo)
	if [ -e "$conf" ] && ! head -n1 "$conf" | grep -qF "$mark"; then
		echo "slurm.sh: $conf exists and is not ours; move it away to run the test cluster" >&2
		exit 1
	fi
	mkdir -p /etc/slurm "$state/ctld" "$state/d" "$logs"
	touch "$jobcomp"
	chmod 644 "$jobcomp"
	cat >"$conf" <<CONF
$mark
ClusterName=stockade-test
SlurmctldHost=$node
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/d
SlurmctldPidFile=/run/stockade-slurmctld.pid
SlurmdPidFile=/run/stockade-slurmd.pid
SlurmctldLogFile=$logs/slurmctld.log
SlurmdLogFile=$logs/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$jobcomp
MinJobAge=600
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$node CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
	chmod 644 "$conf"
	# slurmd loads a cgroup plugin even with proctrack/linuxproc and
	# task/none, and refuses the hybrid hierarchy with cgroup/v2.
	if [ -e /etc/slurm/cgroup.conf ] && ! head -n1 /etc/slurm/cgroup.conf | grep -qF "$mark"; then
		echo "slurm.sh: /etc/slurm/cgroup.conf exists and is not ours; move it away to run the test cluster" >&2
		exit 1
	fi
	printf '%s\nCgroupPlugin=%s\n' "$mark" "$cgplugin" >/etc/slurm/cgroup.conf
}

up() {
	[ "$(id -u)" = 0 ] || { echo "slurm.sh up: run as root" >&2; exit 1; }
	if [ ! -s /etc/munge/munge.key ]; then
		mkdir -p /etc/munge
		/usr/sbin/mungekey --create --keyfile=/etc/munge/munge.key
		chown munge:munge /etc/munge/munge.key
		chmod 600 /etc/munge/munge.key
	fi
	write_conf
	mkdir -p /run/munge /var/lib/munge /var/log/munge
	chown munge:munge /run/munge /var/lib/munge /var/log/munge
	chmod 755 /run/munge
	if ! pid_of munged /run/munge/munged.pid >/dev/null; then
		setpriv --reuid=munge --regid=munge --clear-groups /usr/sbin/munged
	fi
	if ! pid_of slurmctld /run/stockade-slurmctld.pid >/dev/null; then
		/usr/sbin/slurmctld -c -i
	fi
	if ! pid_of slurmd /run/stockade-slurmd.pid >/dev/null; then
		/usr/sbin/slurmd
	fi
	# Ready when the partition has an idle node; slurmctld registers the
	# node within a few seconds of slurmd's start.
	for _ in $(seq 60); do
		if status >/dev/null 2>&1; then
			scontrol update nodename="$node" state=resume >/dev/null 2>&1 || true
			status
			return 0
		fi
		sleep 1
	done
	status || true
	echo "slurm.sh up: the cluster did not come up; see $logs" >&2
	exit 1
}

down() {
	[ "$(id -u)" = 0 ] || { echo "slurm.sh down: run as root" >&2; exit 1; }
	local pid
	for d in slurmd:/run/stockade-slurmd.pid slurmctld:/run/stockade-slurmctld.pid munged:/run/munge/munged.pid; do
		if pid=$(pid_of "${d%%:*}" "${d#*:}"); then
			kill "$pid"
			for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		fi
	done
	if [ -e "$conf" ] && head -n1 "$conf" | grep -qF "$mark"; then rm -f "$conf"; fi
	if [ -e /etc/slurm/cgroup.conf ] && head -n1 /etc/slurm/cgroup.conf | grep -qF "$mark"; then rm -f /etc/slurm/cgroup.conf; fi
	rm -rf "$state"
	# Job ids start again at 1 with the state: no completion record of
	# the old ids may stay behind.
	rm -f "$jobcomp"
}

case "${1:-}" in
up) up ;;
down) down ;;
status) status ;;
*) echo "usage: scripts/slurm.sh up|down|status" >&2; exit 2 ;;
esac
