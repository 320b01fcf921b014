package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"log"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// zone is every name the test host's DNS server knows, with its one A record.
// The names that resolve into the egress floor (private, loopback, metadata)
// let tests check that stockade refuses them after resolution, whatever the
// rules say. AAAA queries for these names get an empty NOERROR; every other
// name is NXDOMAIN.
var zone = map[string]netip.Addr{
	"allowed.test":     netip.MustParseAddr("198.51.100.10"),
	"www.allowed.test": netip.MustParseAddr("198.51.100.10"),
	"other.test":       netip.MustParseAddr("198.51.100.10"),
	"echo.test":        netip.MustParseAddr("198.51.100.20"),
	// The image registry of the --containers tests (scripts/testnet.sh),
	// under two names: one a test allows, one it does not.
	"registry.test": netip.MustParseAddr("198.51.100.30"),
	"mirror.test":   netip.MustParseAddr("198.51.100.30"),
	"private.test":  netip.MustParseAddr("10.0.0.5"),
	"loopback.test": netip.MustParseAddr("127.0.0.1"),
	"metadata.test": netip.MustParseAddr("169.254.169.254"),
}

// queryLog appends query names to a file, one per line.
type queryLog struct {
	mu sync.Mutex
	f  *os.File
}

func openQueryLog(path string) (*queryLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the query log: %w", err)
	}
	// The unprivileged test user reads it; the umask must not decide that.
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return nil, fmt.Errorf("opening the query log: %w", err)
	}
	return &queryLog{f: f}, nil
}

func (q *queryLog) add(name string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, err := fmt.Fprintln(q.f, name); err != nil {
		log.Printf("query log: %v", err)
	}
}

func (q *queryLog) Close() error { return q.f.Close() }

// answer builds the reply to one query message, logging the names asked.
func answer(req []byte, qlog *queryLog) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(req)
	if err != nil {
		return nil, err
	}
	qs, err := p.AllQuestions()
	if err != nil {
		return nil, err
	}
	resp := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired}
	if len(qs) != 1 {
		resp.RCode = dnsmessage.RCodeFormatError
		b := dnsmessage.NewBuilder(nil, resp)
		return b.Finish()
	}
	q := qs[0]
	name := strings.TrimSuffix(strings.ToLower(q.Name.String()), ".")
	qlog.add(name)
	addr, known := zone[name]
	if !known {
		resp.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, resp)
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	if known && q.Type == dnsmessage.TypeA && q.Class == dnsmessage.ClassINET {
		rh := dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 60}
		if err := b.AResource(rh, dnsmessage.AResource{A: addr.As4()}); err != nil {
			return nil, err
		}
	}
	return b.Finish()
}

func serveDNSUDP(pc net.PacketConn, qlog *queryLog) error {
	buf := make([]byte, 65535)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return fmt.Errorf("dns udp: %w", err)
		}
		out, err := answer(buf[:n], qlog)
		if err != nil {
			log.Printf("dns udp from %v: %v", from, err)
			continue
		}
		pc.WriteTo(out, from)
	}
}

func serveDNSTCP(ln net.Listener, qlog *queryLog) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return fmt.Errorf("dns tcp: %w", err)
		}
		go func() {
			defer c.Close()
			for {
				c.SetDeadline(time.Now().Add(10 * time.Second))
				var l [2]byte
				if _, err := io.ReadFull(c, l[:]); err != nil {
					return
				}
				req := make([]byte, binary.BigEndian.Uint16(l[:]))
				if _, err := io.ReadFull(c, req); err != nil {
					return
				}
				out, err := answer(req, qlog)
				if err != nil {
					log.Printf("dns tcp from %v: %v", c.RemoteAddr(), err)
					return
				}
				c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(out))), out...))
			}
		}()
	}
}
