// Command relay is the floor that bench/capture.sh measures stockade's
// egress against: a TCP relay with nothing in it but the relaying. It
// listens on one address, prints the address it got, and connects every
// connection it accepts to another, moving the bytes both ways with
// io.Copy, which between two TCP connections splices through a pipe of
// 1 MiB as the supervisor does (internal/egress/splice_linux.go). It has
// no policy, no sniffing, no deadlines and no audit, so what a download
// through it loses against direct is what any relay on the machine pays
// for the second TCP connection; what stockade loses beyond that is its own.
//
//	relay 127.0.0.1:0 198.51.100.40:8088
package main

import (
	"fmt"
	"io"
	"net"
	"os"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: relay LISTEN-ADDR UPSTREAM-ADDR")
		os.Exit(2)
	}
	l, err := net.Listen("tcp", os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		os.Exit(1)
	}
	fmt.Println(l.Addr())
	for {
		c, err := l.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, "relay: accepting:", err)
			os.Exit(1)
		}
		go relay(c.(*net.TCPConn), os.Args[2])
	}
}

// relay connects c to upstream and copies both ways until both end,
// passing a clean end of one direction on as a half-close.
func relay(c *net.TCPConn, upstream string) {
	defer c.Close()
	u, err := net.Dial("tcp", upstream)
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		return
	}
	up := u.(*net.TCPConn)
	defer up.Close()
	done := make(chan struct{})
	go func() {
		io.Copy(up, c)
		up.CloseWrite()
		close(done)
	}()
	io.Copy(c, up)
	c.CloseWrite()
	<-done
}
