#!/usr/bin/env bash
# run --containers, measured (a benchmark, not a test): the engine's start
# (stockade run --containers until the first `docker version` answers,
# against the same run of `true` without an engine) and
# `podman --remote run --rm IMAGE /bin/true` through the engine inside the
# sandbox against the same engine (same podman flags, storage driver and
# configuration) serving on the host outside any sandbox. Prints one
# markdown table of medians.
#
#   bench/containers.sh               # 10 rounds
#   ROUNDS=30 bench/containers.sh
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-10}
out=$(mktemp -d /tmp/stockade-bench-ctr.XXXXXX)
cleanup() {
	[ -n "${svc:-}" ] && kill "$svc" 2>/dev/null && wait "$svc" 2>/dev/null
	rm -rf "$out" 2>/dev/null || true
}
trap cleanup EXIT
chmod 755 "$out"
CGO_ENABLED=0 go build -o "$out/stockade" ./cmd/stockade
work=$out/work
mkdir -p "$work"
# The image: the host's static busybox, as the escape rows make it.
img=$out/img
mkdir -p "$img/bin"
cp /bin/busybox "$img/bin/"
for c in sh true echo; do ln -s busybox "$img/bin/$c"; done
tar -C "$img" -cf "$work/bb.tar" .

now() { date +%s%N; }
median() { sort -n | awk '{ a[NR] = $1 } END { m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; printf "%.1f", m / 1e6 }'; }

echo "== engine start: $rounds rounds" >&2
: >"$out/start" && : >"$out/plain"
for _ in $(seq "$rounds"); do
	t0=$(now); (cd "$work" && "$out/stockade" run --log-level=error -- true); t1=$(now)
	echo $((t1 - t0)) >>"$out/plain"
	t0=$(now); (cd "$work" && "$out/stockade" run --log-level=error --containers -- docker version >/dev/null); t1=$(now)
	echo $((t1 - t0)) >>"$out/start"
done

echo "== podman run --rm IMAGE /bin/true inside: $rounds rounds" >&2
(cd "$work" && "$out/stockade" run --log-level=error --containers -- sh -c "
	podman --remote import -q bb.tar img >/dev/null
	podman --remote run --rm img /bin/true
	for i in \$(seq $rounds); do
		t0=\$(date +%s%N); podman --remote run --rm img /bin/true; t1=\$(date +%s%N)
		echo \$((t1 - t0))
	done") >"$out/inside"

echo "| measure (median of $rounds, ms) | value |"
echo "|---|---|"
echo "| stockade run -- true | $(median <"$out/plain") |"
echo "| stockade run --containers -- docker version (engine start included) | $(median <"$out/start") |"
echo "| podman run --rm IMAGE /bin/true, engine inside the sandbox | $(median <"$out/inside") |"

echo "== the same outside any sandbox: $rounds rounds" >&2
conf=$out/conf
mkdir -p "$conf"
printf '[engine]\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\nruntime = "crun"\n[containers]\ncgroups = "disabled"\nnetns = "none"\n' >"$conf/containers.conf"
printf '[storage]\ndriver = "vfs"\ngraphroot = "%s"\nrunroot = "%s"\n' "$out/storage" "$out/runroot" >"$conf/storage.conf"
export CONTAINERS_CONF=$conf/containers.conf CONTAINERS_STORAGE_CONF=$conf/storage.conf
# As the engine runs inside: root of a user namespace with the user's
# subordinate ids, its own mount and cgroup namespaces, cgroup2 only.
# Outside, rootful podman asks the kernel's highest open-files and process limits for
# its containers, above this shell's hard limit on some machines: the
# containers get the shell's own limits instead.
printf 'default_ulimits = ["nofile=%s:%s", "nproc=%s:%s"]\n' "$(ulimit -Hn)" "$(ulimit -Hn)" "$(ulimit -Hu)" "$(ulimit -Hu)" >>"$conf/containers.conf"
me=$(id -un)
su=$(awk -F: -v u="$me" '$1 == u { print $2; exit }' /etc/subuid)
sg=$(awk -F: -v u="$me" '$1 == u { print $2; exit }' /etc/subgid)
unshare --user --map-root-user --map-users="$su,1,65536" --map-groups="$sg,1,65536" --mount --cgroup --propagation private sh -c '
	mount -t tmpfs tmpfs /run && mount -t tmpfs tmpfs /sys/fs/cgroup && mount -t cgroup2 cgroup2 /sys/fs/cgroup &&
	exec podman --runtime crun --cgroup-manager cgroupfs --events-backend file system service --time 0 "$0"' "unix://$out/podman.sock" &
svc=$!
url=unix://$out/podman.sock
for _ in $(seq 500); do # a loop on the answer, not a sleep; bounded
	podman --remote --url "$url" version >/dev/null 2>&1 && break
done
podman --remote --url "$url" import -q "$work/bb.tar" img >/dev/null
podman --remote --url "$url" run --rm img /bin/true
: >"$out/outside"
for _ in $(seq "$rounds"); do
	t0=$(now); podman --remote --url "$url" run --rm img /bin/true; t1=$(now)
	echo $((t1 - t0)) >>"$out/outside"
done

in=$(median <"$out/inside"); outside=$(median <"$out/outside")
echo "| podman run --rm IMAGE /bin/true, same engine on the host | $outside |"
echo "| inside / outside | $(awk -v a="$in" -v b="$outside" 'BEGIN { printf "%.2fx", a / b }') |"
