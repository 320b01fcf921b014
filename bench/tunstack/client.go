package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// client runs in the client's namespace (ip netns exec) and prints one JSON
// object: the process's start is never in what it measures.
func client(args []string) error {
	fs := flag.NewFlagSet("client", flag.ExitOnError)
	mode := fs.String("mode", "download", "download, rr, hold or probe")
	addr := fs.String("addr", "198.51.100.10:8080", "server")
	addr6 := fs.String("addr6", "", "the server's IPv6 address and port (probe)")
	size := fs.Int("bytes", 64<<20, "download: bytes; rr: bytes of each answer; hold: bytes each connection reads")
	n := fs.Int("n", 200, "rr: connections; hold: connections at once")
	rtts := fs.Int("rtt", 5, "rr: further request/answer exchanges on each connection")
	fs.Parse(args)
	var out any
	var err error
	switch *mode {
	case "download":
		out, err = download(*addr, *size)
	case "rr":
		out, err = roundTrips(*addr, *n, *size, *rtts)
	case "hold":
		return hold(*addr, *n, *size)
	case "probe":
		out = probe(*addr, *addr6)
	default:
		err = fmt.Errorf("unknown mode %q", *mode)
	}
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

func ask(c net.Conn, n int) error {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(n))
	_, err := c.Write(hdr[:])
	return err
}

type downloadResult struct{ Secs float64 }

func download(addr string, size int) (downloadResult, error) {
	buf := make([]byte, 256<<10)
	t0 := time.Now()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return downloadResult{}, err
	}
	defer c.Close()
	if err := ask(c, size); err != nil {
		return downloadResult{}, err
	}
	got := 0
	for got < size {
		k, err := c.Read(buf)
		got += k
		if err != nil {
			return downloadResult{}, fmt.Errorf("after %d bytes: %w", got, err)
		}
	}
	return downloadResult{Secs: time.Since(t0).Seconds()}, nil
}

type rrResult struct {
	Connect []int64 // connect(2) returned, ns
	First   []int64 // connect, request, first byte of the answer, ns
	RTT     []int64 // one request and its whole answer on an open connection, ns
}

func roundTrips(addr string, n, size, rtts int) (rrResult, error) {
	var r rrResult
	buf := make([]byte, size)
	for range n {
		t0 := time.Now()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return r, err
		}
		t1 := time.Now()
		if err := ask(c, size); err != nil {
			return r, err
		}
		if _, err := io.ReadFull(c, buf[:1]); err != nil {
			return r, err
		}
		t2 := time.Now()
		if _, err := io.ReadFull(c, buf[1:]); err != nil {
			return r, err
		}
		r.Connect = append(r.Connect, t1.Sub(t0).Nanoseconds())
		r.First = append(r.First, t2.Sub(t0).Nanoseconds())
		for range rtts {
			t := time.Now()
			if err := ask(c, size); err != nil {
				return r, err
			}
			if _, err := io.ReadFull(c, buf); err != nil {
				return r, err
			}
			r.RTT = append(r.RTT, time.Since(t).Nanoseconds())
		}
		c.Close()
	}
	return r, nil
}

// hold opens n connections at once, reads size bytes on each, says "held"
// and keeps them open until its standard input ends.
func hold(addr string, n, size int) error {
	conns := make([]net.Conn, 0, n)
	buf := make([]byte, 64<<10)
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		conns = append(conns, c)
		if err := ask(c, size); err != nil {
			return err
		}
	}
	for _, c := range conns {
		for got := 0; got < size; {
			k, err := c.Read(buf)
			got += k
			if err != nil {
				return err
			}
		}
	}
	fmt.Println("held")
	io.Copy(io.Discard, bufio.NewReader(os.Stdin))
	for _, c := range conns {
		c.Close()
	}
	return nil
}

type probeResult struct {
	UDP  string // a datagram to the server's address, port 9, and a read
	ICMP string // an echo request to the server's address
	Void string // an echo request to an address no host has
	TCP6 string // a connection to the server's IPv6 address and an answer
}

func probe(addr, addr6 string) probeResult {
	host, _, _ := net.SplitHostPort(addr)
	var p probeResult
	p.UDP = probeUDP(net.JoinHostPort(host, "9"))
	p.ICMP = probeICMP(host)
	p.Void = probeICMP(noHost)
	if addr6 != "" {
		p.TCP6 = probeTCP(addr6)
	}
	return p
}

// noHost is an address of the test range that nothing in the benchmark has.
const noHost = "198.51.100.99"

func elapsed(t time.Time) string {
	return fmt.Sprintf("%.1f ms", float64(time.Since(t).Microseconds())/1000)
}

func probeUDP(addr string) string {
	t := time.Now()
	c, err := net.Dial("udp", addr)
	if err != nil {
		return fmt.Sprintf("dial: %v after %s", errors.Unwrap(err), elapsed(t))
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("x")); err != nil {
		return fmt.Sprintf("send: %v after %s", err, elapsed(t))
	}
	var b [16]byte
	_, err = c.Read(b[:])
	switch {
	case err == nil:
		return "an answer after " + elapsed(t)
	case errors.Is(err, syscall.ECONNREFUSED):
		return "ECONNREFUSED after " + elapsed(t)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "nothing: timed out after " + elapsed(t)
	default:
		return fmt.Sprintf("%v after %s", err, elapsed(t))
	}
}

// probeICMP sends one echo request on a raw socket (root: the agent would
// need a ping socket, if ping_group_range lets it) and reports who answers.
func probeICMP(host string) string {
	dst := net.ParseIP(host).To4()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMP)
	if err != nil {
		return "socket: " + err.Error()
	}
	defer unix.Close(fd)
	tv := unix.NsecToTimeval(int64(2 * time.Second))
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	msg := []byte{8, 0, 0, 0, 0x12, 0x34, 0, 1, 'p', 'i', 'n', 'g'}
	cs := checksum(msg)
	msg[2], msg[3] = byte(cs>>8), byte(cs)
	sa := &unix.SockaddrInet4{}
	copy(sa.Addr[:], dst)
	t := time.Now()
	if err := unix.Sendto(fd, msg, 0, sa); err != nil {
		return fmt.Sprintf("send: %v after %s", err, elapsed(t))
	}
	var b [1500]byte
	for {
		n, from, err := unix.Recvfrom(fd, b[:], 0)
		if err != nil {
			if errors.Is(err, unix.EAGAIN) {
				return "no reply within 2 s"
			}
			return "recv: " + err.Error()
		}
		ihl := int(b[0]&0xf) * 4
		if n < ihl+8 || b[ihl] != 0 { // not an echo reply (our own request, on lo)
			continue
		}
		f := from.(*unix.SockaddrInet4)
		return fmt.Sprintf("echo reply from %s after %s", net.IP(f.Addr[:]), elapsed(t))
	}
}

func checksum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

func probeTCP(addr string) string {
	t := time.Now()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return fmt.Sprintf("%v after %s", err, elapsed(t))
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if err := ask(c, 1024); err != nil {
		return err.Error()
	}
	buf := make([]byte, 1024)
	if _, err := io.ReadFull(c, buf); err != nil {
		return err.Error()
	}
	return "answered after " + elapsed(t)
}
