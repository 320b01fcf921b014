#!/usr/bin/env bash
# run --containers, measured (a benchmark, not a test). Prints one markdown
# table of medians:
#
#  - `podman --remote run --rm IMAGE /bin/true` through the engine of a
#    `stockade run --containers` session (the client inside the sandbox)
#    against the same podman serving on the host outside any sandbox (the
#    client on the host), with each container's network as the session
#    gives it (slirp4netns) and with --network none; one run of each side
#    per round, the order alternating.
#  - the engine's start: `stockade run --containers -- docker version`
#    (the engine answering included) and `stockade run --containers --
#    true` (the engine set up, not waited for) against `stockade run --
#    true`, in the same rounds.
#  - the memory of an idle session with the engine up: the proportional set
#    size of the supervisor and every process under it (init, the
#    command, the launcher, podman), and the engine's tmpfs (its
#    configuration, with the stockade binary, and its storage).
#
# The engine on the host is the engine of a session less stockade's part:
# the same podman with the same flags and environment (rootless in a user
# namespace of its own: root mapped to the user, 1.. to the user's
# subordinate ids; its own mount and cgroup namespaces and cgroup, with
# cgroup2 alone; its own /run, /dev/shm and /var/tmp; none of the host's
# podman state: a tmpfs over /var/cache/containers, which the session has
# not), the same containers.conf settings (vfs on a tmpfs, crun, cgroups
# disabled, the session's default capabilities, slirp4netns), without the
# OCI hooks, the runtime in front of crun, the engine's seccomp profile
# and the sandbox around it.
#
#   bench/containers.sh               # 15 rounds, as root or as a user with subordinate ids
#   ROUNDS=30 bench/containers.sh
#   STOCKADE_BIN=/path/to/stockade bench/containers.sh   # no build
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-15}
out=$(mktemp -d /tmp/stockade-bench-ctr.XXXXXX)
chmod 755 "$out"
cleanup() {
	if [ -n "${sid:-}" ]; then "$bin" stop -s "$sid" >/dev/null 2>&1 || true; fi
	if [ -n "${svc:-}" ]; then
		# the host engine's cgroup (see below), once it is empty
		local leaf v2
		leaf=$(sed -n 's|^0::\(.*/stockade-bench-[0-9]*\).*|\1|p' /proc/"$svc"/cgroup 2>/dev/null)
		kill "$svc" 2>/dev/null && wait "$svc" 2>/dev/null || true
		v2=$(awk '$(NF - 2) == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
		if [ -n "$leaf" ] && [ -n "$v2" ]; then find "$v2$leaf" -depth -type d -exec rmdir {} + 2>/dev/null || true; fi
	fi
	rm -rf "$out" 2>/dev/null || true
}
trap cleanup EXIT
if [ -n "${STOCKADE_BIN:-}" ]; then
	bin=$STOCKADE_BIN
else
	CGO_ENABLED=0 go build -o "$out/stockade" ./cmd/stockade
	bin=$out/stockade
fi
# Sessions, their logs and HOMEs of this run only.
export XDG_STATE_HOME=$out/state XDG_DATA_HOME=$out/data
work=$out/work
mkdir -p "$work"
# The image: the host's static busybox, as the escape rows make it.
img=$out/img
mkdir -p "$img/bin"
cp /bin/busybox "$img/bin/"
for c in sh true echo; do ln -s busybox "$img/bin/$c"; done
tar -C "$img" -cf "$work/bb.tar" .

fail() { echo "bench/containers.sh: $*" >&2; exit 1; }
now() { date +%s%N; }
median() { sort -n | awk '{ a[NR] = $1 } END { m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; printf "%.1f", m / 1e6 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }
pids() { # $1 and every process under it
	echo "$1"
	local c
	for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do pids "$c"; done
}
pss() { awk '/^Pss:/ { print $2 }' /proc/"$1"/smaps_rollup 2>/dev/null | grep . || echo 0; }

# The engine on the host.
me=$(id -un)
su=$(awk -F: -v u="$me" '$1 == u { print $2; exit }' /etc/subuid)
sg=$(awk -F: -v u="$me" '$1 == u { print $2; exit }' /etc/subgid)
if [ -z "$su" ] || [ -z "$sg" ]; then
	echo "bench/containers.sh: $me has no subordinate ids (usermod --add-subuids 100000-165535 --add-subgids 100000-165535 $me)" >&2
	exit 2
fi
conf=$out/conf
mkdir -p "$conf"
# ocihook.DefaultCaps, as the session's containers.conf has them.
caps='"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_NET_BIND_SERVICE", "CAP_SETFCAP", "CAP_SETGID", "CAP_SETPCAP", "CAP_SETUID", "CAP_SYS_CHROOT"'
cat >"$conf/containers.conf" <<EOF
[containers]
cgroups = "disabled"
netns = "slirp4netns"
http_proxy = false
log_driver = "k8s-file"
default_capabilities = [$caps]

[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
runtime = "crun"
network_cmd_options = ["allow_host_loopback=false", "enable_ipv6=false"]
EOF
# The storage on a tmpfs, as the session's (its namespace's /run).
printf '[storage]\ndriver = "vfs"\ngraphroot = "/run/engine/storage"\nrunroot = "/run/user/0/containers"\n' >"$conf/storage.conf"
hurl=unix://$out/podman.sock
# As the session's engine (engine.ownCgroup), it first moves into a cgroup of
# its own, where it may make one, and roots a cgroup namespace there:
# podman, on start, moves every process of the root of its view into a
# child "init", which would be this shell's cgroup and everything in it.
CONTAINERS_CONF=$conf/containers.conf CONTAINERS_STORAGE_CONF=$conf/storage.conf \
	unshare --user --map-root-user --map-users="$su,1,65536" --map-groups="$sg,1,65536" --mount --cgroup --propagation private sh -c '
	mount -t tmpfs tmpfs /run && mount -t tmpfs tmpfs /dev/shm && mount -t tmpfs tmpfs /var/tmp &&
	{ ! [ -d /var/cache/containers ] || mount -t tmpfs tmpfs /var/cache/containers; } &&
	mount -t tmpfs tmpfs /sys/fs/cgroup && mount -t cgroup2 cgroup2 /sys/fs/cgroup &&
	{ ! mkdir /sys/fs/cgroup/stockade-bench-$$ 2>/dev/null || echo $$ >/sys/fs/cgroup/stockade-bench-$$/cgroup.procs; } &&
	exec unshare --cgroup sh -c "
	umount /sys/fs/cgroup && mount -t cgroup2 cgroup2 /sys/fs/cgroup &&
	mkdir -p /run/user/0 /run/engine/tmp &&
	exec env _CONTAINERS_USERNS_CONFIGURED=done _CONTAINERS_ROOTLESS_UID=0 XDG_RUNTIME_DIR=/run/user/0 \
		HOME=/run/engine TMPDIR=/run/engine/tmp \
		podman --runtime crun --cgroup-manager cgroupfs --events-backend file system service --time 0 \"\$0\"" "$0"' "$hurl" \
	>"$out/host-engine.log" 2>&1 &
svc=$!
for _ in $(seq 500); do # a loop on the answer; bounded
	podman --remote --url "$hurl" version >/dev/null 2>&1 && break
	sleep 0.02
done
podman --remote --url "$hurl" import -q "$work/bb.tar" img >/dev/null || fail "the engine on the host did not start: $(tail -3 "$out/host-engine.log")"
podman --remote --url "$hurl" run --rm img /bin/true || fail "the engine on the host could not run the image"

# The engine of a session: its command runs one container per line on the
# FIFO go, and answers each with the time taken on the FIFO done.
mkfifo "$work/go" "$work/done"
chmod 777 "$work"
sid=$(cd "$work" && "$bin" run -d --log-level=error --containers -- sh -c '
	podman --remote import -q bb.tar img >/dev/null && podman --remote run --rm img /bin/true || { echo failed >done; exit 1; }
	echo ready >done
	while read -r mode <go; do
		case $mode in
		none) net=--network=none ;;
		slirp) net= ;;
		*) exit 0 ;;
		esac
		t0=$(date +%s%N); podman --remote run --rm $net img /bin/true || { echo failed >done; exit 1; }; t1=$(date +%s%N)
		echo $((t1 - t0)) >done
	done')
# Bounded: a session that ended opens neither FIFO.
r=$(timeout 120 head -n1 "$work/done") || true
[ "$r" = ready ] || fail "the session's engine could not run the image (stockade logs -s $sid)"
inside() {
	local t
	timeout 60 sh -c 'echo "$0" >"$1"' "$1" "$work/go" || fail "the session stopped answering"
	t=$(timeout 60 head -n1 "$work/done") || fail "the session stopped answering"
	case $t in '' | failed) fail "podman run in the session failed" ;; esac
	echo "$t" >>"$out/in-$1"
}
outside() {
	local net= t0 t1
	[ "$1" = none ] && net=--network=none
	t0=$(now); podman --remote --url "$hurl" run --rm $net img /bin/true || fail "podman run on the host failed"; t1=$(now)
	echo $((t1 - t0)) >>"$out/out-$1"
}

echo "== podman run --rm IMAGE /bin/true, inside and outside: $rounds rounds" >&2
: >"$out/load"
for i in $(seq "$rounds"); do
	cut -d' ' -f1 /proc/loadavg >>"$out/load"
	for mode in slirp none; do
		if [ $((i % 2)) = 0 ]; then inside $mode && outside $mode; else outside $mode && inside $mode; fi
	done
done
timeout 10 sh -c 'echo quit >"$0"' "$work/go" || true
"$bin" stop -s "$sid" >/dev/null 2>&1 || true
sid=

echo "== engine start: $rounds rounds" >&2
probe="docker version"
: >"$out/plain" && : >"$out/start" && : >"$out/setup"
for i in $(seq "$rounds"); do
	cut -d' ' -f1 /proc/loadavg >>"$out/load"
	plain() { t0=$(now); (cd "$work" && "$bin" run --log-level=error -- true) || fail "stockade run failed"; t1=$(now); echo $((t1 - t0)) >>"$out/plain"; }
	start() { t0=$(now); (cd "$work" && "$bin" run --log-level=error --containers -- $probe >/dev/null) || fail "$probe in the session failed"; t1=$(now); echo $((t1 - t0)) >>"$out/start"; }
	setup() { t0=$(now); (cd "$work" && "$bin" run --log-level=error --containers -- true) || fail "stockade run --containers failed"; t1=$(now); echo $((t1 - t0)) >>"$out/setup"; }
	if [ $((i % 2)) = 0 ]; then plain && setup && start; else start && setup && plain; fi
done

echo "== an idle session's memory" >&2
rm -f "$work/up"
sid=$(cd "$work" && "$bin" run -d --log-level=error --containers -- sh -c "$probe >/dev/null && touch up; exec sleep 600")
for _ in $(seq 300); do [ -e "$work/up" ] && break; sleep 0.1; done
[ -e "$work/up" ] || fail "the session's engine did not answer"
sleep 2 # podman settles
sup=$("$bin" list --json | awk -v id="$sid" '$1 == "\"id\":" && index($2, id) { hit = 1 } hit && $1 == "\"pid\":" { gsub(",", "", $2); print $2; exit }')
total=0 engine=0 unread=
for p in $(pids "$sup"); do
	[ -r /proc/"$p"/smaps_rollup ] && head -c1 /proc/"$p"/smaps_rollup >/dev/null 2>&1 || unread="$unread $(cat /proc/"$p"/comm 2>/dev/null)"
	k=$(pss "$p")
	total=$((total + k))
	printf '%s\t%s\t%s kB\n' "$p" "$(cat /proc/"$p"/comm 2>/dev/null)" "$k" >>"$out/mem"
	case $(cat /proc/"$p"/comm 2>/dev/null) in podman | conmon | slirp4netns | catatonit) engine=$((engine + k)) ;; esac
done
hostpod=$(pss "$svc")
podpid=$(awk -F'\t' '$2 == "podman" { print $1; exit }' "$out/mem")
# The configuration is a tmpfs of its own; the storage is the project's
# kept directory on the disk, whose file system's usage is not the
# engine's: what its tree holds is.
conf=$(stat -f -c '%b %f %S' "/proc/$podpid/root/stockade-engine" | awk '{ s += ($1 - $2) * $3 } END { print int(s / 1024) }')
store=$(du -sk "/proc/$podpid/root/stockade-engine/storage" 2>/dev/null | awk '{ print $1 }')
cat "$out/mem" >&2

load=$(sort -n "$out/load" | awk '{ a[NR] = $1 } END { print a[1] "–" a[NR] " (median " a[int((NR + 1) / 2)] ")" }')
echo
echo "$(id -un), $(nproc) cores, load average during the rounds $load, $rounds rounds"
echo
echo "| measure (median, ms) | in the session | on the host | ratio |"
echo "|---|---|---|---|"
for mode in slirp none; do
	a=$(median <"$out/in-$mode") b=$(median <"$out/out-$mode")
	case $mode in slirp) what="podman run --rm IMAGE /bin/true (slirp4netns)" ;; none) what="podman run --rm --network=none IMAGE /bin/true" ;; esac
	echo "| $what | $a | $b | $(ratio "$a" "$b") |"
done
a=$(median <"$out/start") b=$(median <"$out/plain")
c=$(median <"$out/setup")
echo "| stockade run --containers -- true / stockade run -- true (the engine's root and launcher; the command does not wait for podman) | $c | $b | +$(awk -v a="$c" -v b="$b" 'BEGIN { printf "%.1f ms", a - b }') |"
echo "| stockade run --containers -- $probe / stockade run -- true | $a | $b | +$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1f ms", a - b }') |"
echo
echo "| idle session, engine up | PSS |"
echo "|---|---|"
echo "| supervisor, init, command, launcher and engine${unread:+ (not readable here, not counted:$unread)} | $((total / 1024)) MiB ($total kB) |"
echo "| of which the engine (podman) | $((engine / 1024)) MiB |"
echo "| podman on the host, after the rounds above (for scale) | $((hostpod / 1024)) MiB |"
echo "| the engine's configuration tmpfs (with the stockade binary) | $((conf / 1024)) MiB |"
echo "| the project's kept storage after the rounds (on disk) | $((${store:-0} / 1024)) MiB |"
