#!/usr/bin/env bash
# The egress path as a user's tool sees it (a benchmark, not a test): curl
# downloads a 64 MiB file from a server in the test network namespace
# (scripts/testnet.sh), the same download in every round six ways, the
# order rotating: on the host directly; inside `stockade run` by
# transparent capture (no proxy variables), through a CONNECT tunnel of the
# proxy (curl -p), and as a plain-HTTP request the proxy forwards; on the
# host through bench/relay, a relay with nothing in it but the splicing:
# the floor any relay pays on this machine, which tells stockade's own
# cost from the second TCP connection's; and by capture at once after the
# sandbox's start (at-start). curl's own time_total is used, so the
# sandbox's start is not in it, and the other three sandboxed ways start
# curl 0.2 s after the command: a download in the first 50 ms or so of a
# fresh sandbox ran slower, with the same CPU time of curl, supervisor and
# server (bench/README.md), a transient of the start that at-start keeps in
# the table. Then the latency the first five ways: the time to the first
# byte of a 1 KiB file over 20 fresh connections per way and round, inside
# one sandbox. Prints two markdown tables: throughput (medians and the
# ratios to direct; budget: >= 0.8 for capture, connect and forward) and
# latency (median, p90, and what each way adds).
#
#   bench/capture.sh                 # 15 rounds, as root (the server runs in the namespace)
#   ROUNDS=25 bench/capture.sh
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-15}
if [ "$(id -u)" != 0 ]; then
	echo "bench/capture.sh: run it as root (it adds an address and a server to the test network)" >&2
	exit 2
fi
scripts/testnet.sh status >/dev/null 2>&1 || scripts/testnet.sh up >/dev/null
out=$(mktemp -d /tmp/stockade-bench-capture.XXXXXX)
addr=198.51.100.40
cleanup() {
	[ -n "${srv:-}" ] && kill "$srv" 2>/dev/null
	[ -n "${relay:-}" ] && kill "$relay" 2>/dev/null
	ip netns exec stk-testnet ip addr del $addr/24 dev stk-n0 2>/dev/null || true
	rm -rf "$out"
}
trap cleanup EXIT
chmod 755 "$out"
CGO_ENABLED=0 go build -o "$out/stockade" ./cmd/stockade
CGO_ENABLED=0 go build -o "$out/relay" ./bench/relay
mkdir -p "$out/www" "$out/work"
head -c $((64 << 20)) /dev/urandom >"$out/www/big"
head -c 1024 /dev/urandom >"$out/www/small"
ip netns exec stk-testnet ip addr add $addr/24 dev stk-n0 2>/dev/null || true
ip netns exec stk-testnet python3 -m http.server 8088 --bind $addr --directory "$out/www" >/dev/null 2>&1 &
srv=$!
url=http://$addr:8088/big
for _ in $(seq 50); do curl -s -o /dev/null "$url" && break; sleep 0.1; done
"$out/relay" 127.0.0.1:0 $addr:8088 >"$out/relay.addr" &
relay=$!
for _ in $(seq 50); do [ -s "$out/relay.addr" ] && break; sleep 0.1; done
relayed=http://$(cat "$out/relay.addr")
export XDG_STATE_HOME=$out/state XDG_DATA_HOME=$out/data
cd "$out/work"
inside() { # curl inside the sandbox with the proxy variables unset (capture) or kept
	"$out/stockade" run --log-level error --agent-allow $addr -- sh -c "$1 curl -s $2 -o /dev/null -w '%{time_total}' $url" 2>/dev/null
}
# requests N [prefix curl-flags [server]] prints the time to the first
# byte of N fresh connections for the 1 KiB file, one per line, inside one
# sandbox (prefix non-empty) or on the host: the latency a connection
# adds, with the sandbox's start left out.
requests() {
	local loop="for i in \$(seq $1); do curl -s $3 -o /dev/null -w '%{time_starttransfer}\n' ${4:-http://$addr:8088}/small; done"
	if [ -n "$2" ]; then
		"$out/stockade" run --log-level error --agent-allow $addr -- sh -c "${2#-} $loop" 2>/dev/null
	else
		sh -c "$loop"
	fi
}
noproxy='unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy;'
settle='sleep 0.2;' # past the start's transient (above)
ways=(direct capture connect forward relay at-start)
n=${#ways[@]}
for i in $(seq "$rounds"); do
	for k in $(seq 0 $((n - 1))); do
		w=${ways[$(((i + k) % n))]}
		case $w in
		direct) t=$(curl -s -o /dev/null -w '%{time_total}' "$url") ;;
		relay) t=$(curl -s -o /dev/null -w '%{time_total}' "$relayed/big") ;;
		capture) t=$(inside "$settle $noproxy" '') ;;
		connect) t=$(inside "$settle" '-p') ;;
		forward) t=$(inside "$settle" '') ;;
		at-start) t=$(inside "$noproxy" '') ;;
		esac
		echo "$w $t" >>"$out/times"
	done
done
# Latency: in each round, 20 fresh connections each way, the order
# rotating as above.
ways=(direct capture connect forward relay)
n=${#ways[@]}
for i in $(seq "$rounds"); do
	for k in $(seq 0 $((n - 1))); do
		w=${ways[$(((i + k) % n))]}
		case $w in
		direct) requests 20 '' '' ;;
		relay) requests 20 '' '' "$relayed" ;;
		capture) requests 20 "-$noproxy" '' ;;
		connect) requests 20 '-:;' '-p' ;;
		forward) requests 20 '-:;' '' ;;
		esac | sed "s/^/$w /" >>"$out/latency"
	done
done
python3 - "$out/times" "$rounds" "$out/latency" <<'PY'
import statistics, sys, collections
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    w, t = line.split()
    d[w].append(float(t))
m = {w: statistics.median(v) for w, v in d.items()}
print(f"| 64 MiB download, {sys.argv[2]} rounds | median | MiB/s | of direct |")
print("|---|---:|---:|---:|")
for w in ("direct", "capture", "connect", "forward", "relay", "at-start"):
    print(f"| {w} | {m[w]*1000:.1f} ms | {64/m[w]:.0f} | {m['direct']/m[w]:.2f} |")
lat = collections.defaultdict(list)
for line in open(sys.argv[3]):
    w, t = line.split()
    lat[w].append(float(t) * 1000)
def q(v, f):
    v = sorted(v)
    return v[min(len(v) - 1, int(f * len(v)))]
print()
print(f"| time to first byte, 1 KiB, {len(lat['direct'])} fresh connections each | median | p90 | added to direct (median) |")
print("|---|---:|---:|---:|")
for w in ("direct", "capture", "connect", "forward", "relay"):
    med = statistics.median(lat[w])
    print(f"| {w} | {med:.2f} ms | {q(lat[w], 0.9):.2f} ms | {med - statistics.median(lat['direct']):+.2f} ms |")
PY
