package main

import (
	"encoding/binary"
	"flag"
	"io"
	"net"
)

// The protocol of the server: the client sends a 4-byte big-endian length,
// the server answers that many bytes; again, until the client closes.

var payload = make([]byte, 1<<20)

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	addrs := fs.String("listen", "198.51.100.10:8080", "address to listen on (a second one after a comma)")
	fs.Parse(args)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	var lns []net.Listener
	for _, a := range splitComma(*addrs) {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			return err
		}
		lns = append(lns, ln)
	}
	errc := make(chan error, len(lns))
	for _, ln := range lns {
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					errc <- err
					return
				}
				go answer(c)
			}
		}()
	}
	return <-errc
}

func answer(c net.Conn) {
	defer c.Close()
	var hdr [4]byte
	for {
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(hdr[:]))
		for n > 0 {
			k := min(n, len(payload))
			if _, err := c.Write(payload[:k]); err != nil {
				return
			}
			n -= k
		}
	}
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}
