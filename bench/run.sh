#!/usr/bin/env bash
# Builds stockade, runs the comparisons of the budget in bench/README.md side
# by side (startup against bwrap; real work inside against the same work
# outside) and prints one markdown table. Ratios, not times: the machine may be busy, and only
# measurements taken in the same interleaved rounds are compared.
#
#   bench/run.sh                      # 200 startup rounds, 5 workload rounds
#   STARTUP_ROUNDS=500 WORKLOAD_ROUNDS=9 bench/run.sh
#   HYPERFINE=0 bench/run.sh          # skip the hyperfine cross-check
#   BENCH_GIT_FILES=20000 BENCH_GIT_LOOPS=10 BENCH_GO_BUILDS=3 bench/run.sh
#
# Exit status: 0 when everything ran and is within budget, 1 when something is
# over budget or failed, 2 when something was skipped (with STOCKADE_MUST_WORK=1
# a skip fails instead).
set -euo pipefail
cd "$(dirname "$0")/.."

startup_rounds=${STARTUP_ROUNDS:-200}
workload_rounds=${WORKLOAD_ROUNDS:-5}
out=$(mktemp -d /tmp/stockade-bench.XXXXXX)
trap 'rm -rf "$out"' EXIT
chmod 755 "$out"

echo "== building stockade (CGO_ENABLED=0)" >&2
CGO_ENABLED=0 go build -o "$out/stockade" ./cmd/stockade
export STOCKADE_BIN="$out/stockade"

echo "== startup: $startup_rounds interleaved rounds" >&2
go test -v -run XXX -bench '^BenchmarkStartup$' -benchtime "${startup_rounds}x" -timeout 30m ./bench/ \
	| tee "$out/startup.txt" >&2 || true
echo "== startup in a ${BENCH_GIT_FILES:-50000}-file repository: 20 interleaved rounds" >&2
go test -v -run XXX -bench '^BenchmarkStartupLargeRepo$' -benchtime 20x -timeout 30m ./bench/ \
	| tee "$out/largerepo.txt" >&2 || true
echo "== workload: $workload_rounds interleaved rounds each" >&2
go test -v -run XXX -bench '^BenchmarkWorkload$' -benchtime "${workload_rounds}x" -timeout 60m ./bench/ \
	| tee "$out/workload.txt" >&2 || true

# metric FILE BENCH UNIT prints the value reported for UNIT on BENCH's line.
metric() {
	awk -v b="$2" -v u="$3" '$1 ~ "^"b"(-[0-9]+)?$" { for (i = 3; i < NF; i += 2) if ($(i+1) == u) print $i }' "$1"
}
# why FILE BENCH prints the skip or failure reason of BENCH: go test -v
# prints the last log line just before "--- SKIP:" or "--- FAIL:".
why() {
	awk -v b="$2" '
		/^[ \t]+[A-Za-z0-9_]+\.go:[0-9]+: / { last = $0; sub(/^[ \t]+[A-Za-z0-9_]+\.go:[0-9]+: /, "", last) }
		$0 ~ "--- (SKIP|FAIL): "b"(-[0-9]+)?$" { print last; exit }' "$1"
}

status=0
row() { # what file bench ref-name stockade-unit ref-unit ratio-unit target fmt
	local what=$1 file=$2 bench=$3 sunit=$4 runit=$5 vunit=$6 target=$7 cmp=$8
	local s r v
	s=$(metric "$file" "$bench" "$sunit")
	r=$(metric "$file" "$bench" "$runit")
	v=$(metric "$file" "$bench" "$vunit")
	if [ -z "$v" ]; then
		local reason
		reason=$(why "$file" "$bench")
		if grep -q -- "--- FAIL: $bench" "$file"; then
			echo "| $what | – | – | – | $cmp $target | FAIL: ${reason:-see the log above} |"
			status=1
		else
			echo "| $what | – | – | – | $cmp $target | skipped: ${reason:-no result} |"
			[ $status = 1 ] || status=2
		fi
		return
	fi
	local verdict
	verdict=$(awk -v v="$v" -v t="$target" 'BEGIN { print (v + 0 <= t + 0) ? "pass" : "FAIL" }')
	[ "$verdict" = pass ] || status=1
	echo "| $what | $s ms | $r ms | $v | $cmp $target | $verdict |"
}

echo
echo "| what | stockade median | reference median | ratio / overhead | target | result |"
echo "|---|---:|---:|---:|---:|---|"
row 'startup: `run -- /bin/true` vs bwrap' "$out/startup.txt" BenchmarkStartup \
	stockade-ms bwrap-ms ratio 2.0 '≤'
row "startup in a ${BENCH_GIT_FILES:-50000}-file repository vs an empty project (ms added)" "$out/largerepo.txt" \
	BenchmarkStartupLargeRepo repo-ms empty-ms added-ms 250 '≤'
row "git status ×${BENCH_GIT_LOOPS:-20}, ${BENCH_GIT_FILES:-50000} files: inside vs outside" "$out/workload.txt" \
	BenchmarkWorkload/GitStatus inside-ms outside-ms overhead-% 3 '≤'
row "go build ×${BENCH_GO_BUILDS:-5}, 200 files: inside vs outside" "$out/workload.txt" \
	BenchmarkWorkload/GoBuild inside-ms outside-ms overhead-% 3 '≤'

if [ "${HYPERFINE:-1}" != 0 ] && command -v hyperfine >/dev/null && command -v bwrap >/dev/null; then
	echo
	echo "Cross-check with hyperfine (runs each command back to back, not interleaved; see bench/README.md):"
	echo
	(cd "$out" && hyperfine -N --warmup 5 --runs 100 --style none --export-markdown "$out/hf.md" \
		"$STOCKADE_BIN run -- /bin/true" \
		"bwrap --unshare-all --ro-bind / / --dev /dev --proc /proc /bin/true" >/dev/null 2>&1) \
		&& sed "s|$out/||" "$out/hf.md" || echo "(hyperfine failed)"
fi
exit $status
