module github.com/stockade-dev/stockade

go 1.26.0

require (
	github.com/alecthomas/kong v1.17.0
	github.com/creack/pty v1.1.24
	golang.org/x/net v0.47.0
	golang.org/x/sys v0.49.0
	golang.org/x/term v0.37.0
)

require golang.org/x/text v0.31.0 // indirect
