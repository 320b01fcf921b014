package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"
)

// relay sets up one way of capture in the named namespace and serves it
// from the namespace the process runs in (which reaches the server), as
// stockade's supervisor does; it says "ready" and runs until killed.
func relay(args []string) error {
	fs := flag.NewFlagSet("relay", flag.ExitOnError)
	way := fs.String("way", "nft", "nft or tun")
	ns := fs.String("ns", "", "the client's network namespace")
	port := fs.Int("port", nftPort, "nft: the capture listener's port")
	mtu := fs.Int("mtu", 1500, "tun: the device's MTU")
	fs.BoolVar(&tunSACK, "sack", tunSACK, "tun: SACK and RACK in the stack")
	fs.IntVar(&copyBuf, "buf", copyBuf, "tun: bytes of each direction's copy buffer")
	fs.Parse(args)
	nsfd, err := openNS(*ns)
	if err != nil {
		return err
	}
	switch *way {
	case "nft":
		ln, err := setupNFT(nsfd, uint16(*port))
		if err != nil {
			return err
		}
		fmt.Println("ready")
		return serveNFT(ln)
	case "tun":
		if _, err := setupTUN(nsfd, uint32(*mtu)); err != nil {
			return err
		}
		fmt.Println("ready")
		select {}
	}
	return fmt.Errorf("unknown way %q", *way)
}

// dialOut dials where a captured connection was going, from the relay's
// own namespace.
func dialOut(dst netip.AddrPort) (*net.TCPConn, error) {
	c, err := net.DialTimeout("tcp", dst.String(), 5*time.Second)
	if err != nil {
		return nil, err
	}
	return c.(*net.TCPConn), nil
}

type closeWriter interface{ CloseWrite() error }

// pipe copies both ways until both ends are done, then closes both.
// copyFn moves one direction (io.Copy splices between two kernel sockets).
func pipe(a, b net.Conn, copyFn func(dst, src net.Conn)) {
	done := make(chan struct{}, 2)
	one := func(dst, src net.Conn) {
		copyFn(dst, src)
		if cw, ok := dst.(closeWriter); ok {
			cw.CloseWrite()
		}
		done <- struct{}{}
	}
	go one(a, b)
	go one(b, a)
	<-done
	<-done
	a.Close()
	b.Close()
}

func spliceCopy(dst, src net.Conn) { io.Copy(dst, src) }

// copyBuf is the size of bufCopy's buffer: io.Copy's. Each direction of
// each connection holds one while it waits to read.
var copyBuf = 32 << 10

// bufCopy copies through a buffer (a gVisor endpoint is not a kernel
// socket: nothing to splice).
func bufCopy(dst, src net.Conn) {
	buf := make([]byte, copyBuf)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
