module github.com/stockade-dev/stockade/bench/tunstack

go 1.26.3

require (
	github.com/stockade-dev/stockade v0.0.0
	golang.org/x/sys v0.49.0
	gvisor.dev/gvisor v0.0.0-20260527191743-a81fd9dd382e
)

require (
	github.com/google/btree v1.1.2 // indirect
	golang.org/x/exp v0.0.0-20250711185948-6ae5c78190dc // indirect
	golang.org/x/time v0.15.0 // indirect
)

// The capture's netlink messages come from the repository's own
// internal/capture, so that the nft way sends exactly stockade's bytes.
replace github.com/stockade-dev/stockade => ../..
