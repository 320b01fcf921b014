#!/usr/bin/env bash
# The test network of the network end-to-end tests: a network namespace
# stk-testnet, joined to the host by a veth pair, in which test/netenv/server
# plays the Internet on TEST-NET-2 addresses (198.51.100.0/24, routed to the
# namespace only while it is up). Not TEST-NET-3: on these machines the
# package registries answer from 203.0.113.0/24, and a route for that range
# would capture them; `up` refuses to start if a registry resolves into
# the test range.
#
#   host   stk-h0  198.51.100.1/24
#   netns  stk-n0  198.51.100.10 (HTTP :80, HTTPS :443), 198.51.100.20 (echo :7),
#                  198.51.100.53 (DNS :53 UDP+TCP),
#                  198.51.100.30 (an image registry :5000, plain HTTP: Debian's
#                  docker-registry, with stockade/busybox:1 pushed by
#                  test/netenv/pushimage; its digest in /run/stk-testnet-registry.digest)
#
# Usage: scripts/testnet.sh up|down|status (root for up and down; every
# command is idempotent). `up` builds the server with go unless
# STK_TESTNET_SERVER names a prebuilt one. The server outlives this script
# (setsid); `down` stops it and removes the namespace and the veth pair.
set -euo pipefail
cd "$(dirname "$0")/.."

ns=stk-testnet
hostif=stk-h0
nsif=stk-n0
pidfile=/run/stk-testnet.pid
logfile=/run/stk-testnet.log
querylog=/run/stk-testnet-queries.log
ready=/run/stk-testnet.ready
server_bin=${STK_TESTNET_SERVER:-/run/stk-testnet-server}
registry_dir=/run/stk-testnet-registry
registry_pidfile=/run/stk-testnet-registry.pid
registry_digest=/run/stk-testnet-registry.digest
push_bin=/run/stk-testnet-pushimage

server_pid() {
	local pid
	pid=$(cat "$pidfile" 2>/dev/null) || return 1
	# The pid must still be our server, not a recycled number.
	# (cmdline, unlike exe, is readable by a user checking the status).
	[ -n "$pid" ] && [ "$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | head -n1)" = "$server_bin" ] || return 1
	echo "$pid"
}

registry_pid() {
	local pid
	pid=$(cat "$registry_pidfile" 2>/dev/null) || return 1
	[ -n "$pid" ] && [ "$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | head -n1)" = /usr/bin/docker-registry ] || return 1
	echo "$pid"
}

ns_exists() { ip netns list 2>/dev/null | grep -qw "^$ns"; }

# answers HOST PORT: a TCP connect from the host within 2 s.
answers() { timeout 2 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; }

status() {
	local ok=0
	if ns_exists; then echo "netns $ns: present"; else echo "netns $ns: absent"; ok=1; fi
	if ip -br addr show dev "$hostif" 2>/dev/null | grep -q 198.51.100.1/24; then
		echo "veth $hostif: $(ip -br addr show dev "$hostif" | awk '{print $2, $3}')"
	else
		echo "veth $hostif: absent"; ok=1
	fi
	if pid=$(server_pid); then echo "server: pid $pid, log $logfile, queries $querylog"; else echo "server: not running"; ok=1; fi
	# Probe only through our veth: without it the default route would carry
	# the probes off this machine.
	if ! ip route get 198.51.100.10 2>/dev/null | grep -qw "dev $hostif"; then
		echo "198.51.100.0/24: not routed through $hostif; ports not probed"
		return 1
	fi
	if pid=$(registry_pid); then echo "registry: pid $pid, image digest $(cat "$registry_digest" 2>/dev/null)"; else echo "registry: not running"; ok=1; fi
	for hp in 198.51.100.10:80 198.51.100.10:443 198.51.100.20:7 198.51.100.53:53 198.51.100.30:5000; do
		if answers "${hp%:*}" "${hp#*:}"; then echo "$hp: answers"; else echo "$hp: no answer"; ok=1; fi
	done
	return $ok
}

up() {
	local missing=()
	[ "$(id -u)" = 0 ] || missing+=("root (run: sudo $0 up)")
	command -v ip >/dev/null || missing+=("ip (apt-get install -y iproute2)")
	command -v setsid >/dev/null || missing+=("setsid (apt-get install -y util-linux)")
	[ -x /usr/bin/docker-registry ] || missing+=("docker-registry (apt-get install -y docker-registry)")
	[ -x /bin/busybox ] || missing+=("/bin/busybox (apt-get install -y busybox-static)")
	[ -x "$server_bin" ] || command -v go >/dev/null || missing+=("go, or STK_TESTNET_SERVER=<prebuilt test/netenv/server>")
	if [ ${#missing[@]} -gt 0 ]; then
		printf 'testnet.sh: cannot bring the test network up; missing: %s\n' "${missing[@]}" >&2
		exit 1
	fi
	if [ -z "${STK_TESTNET_SERVER:-}" ]; then
		CGO_ENABLED=0 go build -o "$server_bin" ./test/netenv/server
	fi
	if [ -z "${STK_TESTNET_PUSHIMAGE:-}" ]; then
		CGO_ENABLED=0 go build -o "$push_bin" ./test/netenv/pushimage
	else
		push_bin=$STK_TESTNET_PUSHIMAGE
	fi

	ns_exists || ip netns add "$ns"
	if ! ip link show "$hostif" >/dev/null 2>&1; then
		ip link add "$hostif" type veth peer name "$nsif" netns "$ns"
	fi
	for h in registry.npmjs.org proxy.golang.org deb.debian.org; do
		if getent hosts "$h" | grep -q '^198\.51\.100\.'; then
			echo "testnet.sh: $h resolves into 198.51.100.0/24; the test network would capture it" >&2
			exit 1
		fi
	done
	ip addr replace 198.51.100.1/24 dev "$hostif"
	ip link set "$hostif" up
	for a in 198.51.100.10/24 198.51.100.53/24 198.51.100.20/24 198.51.100.30/24; do
		ip -n "$ns" addr replace "$a" dev "$nsif"
	done
	ip -n "$ns" link set "$nsif" up
	ip -n "$ns" link set lo up

	if pid=$(server_pid); then
		echo "testnet: server already running (pid $pid)"
	else
		rm -f "$ready"
		: >"$querylog"
		chmod 644 "$querylog"
		setsid ip netns exec "$ns" "$server_bin" -querylog "$querylog" -ready "$ready" \
			</dev/null >>"$logfile" 2>&1 &
		pid=$!
		echo "$pid" >"$pidfile"
		# The server writes $ready once every listener is bound. No event
		# reaches a shell from another session, so poll, bounded: 100 x 0.1 s.
		for _ in $(seq 100); do
			[ -e "$ready" ] && break
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		if [ ! -e "$ready" ]; then
			echo "testnet.sh: the server did not report ready; its log ($logfile):" >&2
			tail -n 20 "$logfile" >&2
			exit 1
		fi
	fi
	chmod 644 "$querylog"
	registry_up
	status
}

# registry_up runs the image registry in the namespace, with a store of its
# own on /run, and pushes the test image to it.
registry_up() {
	if pid=$(registry_pid); then
		echo "testnet: registry already running (pid $pid)"
	else
		mkdir -p "$registry_dir/store"
		cat >"$registry_dir/config.yml" <<YML
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $registry_dir/store
http:
  addr: 198.51.100.30:5000
YML
		setsid ip netns exec "$ns" /usr/bin/docker-registry serve "$registry_dir/config.yml" \
			</dev/null >>"$registry_dir/log" 2>&1 &
		echo $! >"$registry_pidfile"
	fi
	# The registry says nothing when it listens: poll, bounded: 100 x 0.1 s.
	for _ in $(seq 100); do answers 198.51.100.30 5000 && break; sleep 0.1; done
	if ! answers 198.51.100.30 5000; then
		echo "testnet.sh: the registry does not answer; its log ($registry_dir/log):" >&2
		tail -n 20 "$registry_dir/log" >&2
		exit 1
	fi
	"$push_bin" -registry http://198.51.100.30:5000 -digest "$registry_digest" >/dev/null
	chmod 644 "$registry_digest"
}

down() {
	[ "$(id -u)" = 0 ] || { echo "testnet.sh: down needs root (run: sudo $0 down)" >&2; exit 1; }
	if pid=$(server_pid); then
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	if pid=$(registry_pid); then
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -rf "$registry_dir" "$registry_pidfile" "$registry_digest"
	# The query log goes too: tests take its presence for a running server.
	rm -f "$pidfile" "$ready" "$querylog"
	! ip link show "$hostif" >/dev/null 2>&1 || ip link del "$hostif"
	! ns_exists || ip netns del "$ns"
	echo "testnet: down"
}

case "${1:-}" in
up) up ;;
down) down ;;
status) status ;;
*) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
