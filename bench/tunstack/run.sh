#!/usr/bin/env bash
# Measures a TUN device served by gVisor's netstack against stockade's
# nftables capture and a direct connection (README.md). As root:
#
#   bench/tunstack/run.sh                 # 15 rounds
#   bench/tunstack/run.sh -rounds 25      # flags go to `tunstack run`
#
# Builds the program twice (with the netstack, and -tags nonetstack to
# compare size and start), counts what gVisor adds to the build, runs it
# and prints markdown. Makes network namespaces tsb-* and removes them.
set -euo pipefail
cd "$(dirname "$0")"
if [ "$(id -u)" != 0 ]; then
	echo "bench/tunstack/run.sh: run it as root (it makes network namespaces)" >&2
	exit 2
fi
export CGO_ENABLED=0 GOFLAGS=-mod=mod
out=$(mktemp -d /tmp/tunstack.XXXXXX)
trap 'rm -rf "$out"' EXIT
go build -o "$out/tunstack" .
go build -tags nonetstack -o "$out/tunstack-nonet" .

# What the netstack brings into the build: packages, modules, lines of the
# Go files compiled for this platform (with and without gVisor's
# generated *_autogen.go files).
files() { # MODULE: the compiled Go files of its packages in the build
	go list -deps -f "{{with .Module}}{{if eq .Path \"$1\"}}{{\$.Dir}}{{range \$.GoFiles}} {{.}}{{end}}{{end}}{{end}}" . |
		awk '{for (i = 2; i <= NF; i++) print $1 "/" $i}'
}
gv=gvisor.dev/gvisor
echo "## What gVisor's netstack adds to the build"
echo
echo "| | |"
echo "|---|---:|"
echo "| gVisor version | $(go list -m -f '{{.Version}}' $gv) |"
echo "| its packages in the build | $(go list -deps -f "{{with .Module}}{{if eq .Path \"$gv\"}}x{{end}}{{end}}" . | grep -c x) |"
echo "| their lines (compiled files) | $(files $gv | xargs cat | wc -l) |"
echo "| of which not generated | $(files $gv | grep -v _autogen | xargs cat | wc -l) |"
echo "| files that import unsafe | $(files $gv | xargs grep -l '"unsafe"' | wc -l) |"
others=$(go list -deps -f '{{with .Module}}{{.Path}}{{end}}' . | sort -u |
	grep -v -e "^$gv\$" -e '^github.com/stockade-dev/stockade' -e '^golang.org/x/sys$')
for m in $others; do
	echo "| module it requires: $m | $(files "$m" | xargs cat | wc -l) lines |"
done
echo
"$out/tunstack" run -nonet "$out/tunstack-nonet" "$@"
