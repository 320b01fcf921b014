package egress

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"
)

func TestReadGreeting(t *testing.T) {
	tests := []struct {
		in      []byte
		noAuth  bool
		wantErr bool
	}{
		{[]byte{5, 1, 0}, true, false},
		{[]byte{5, 2, 2, 0}, true, false},
		{[]byte{5, 1, 2}, false, false}, // username/password only: 0xFF
		{[]byte{5, 0}, false, false},
		{[]byte{4, 1, 0}, false, true},
		{[]byte{5, 2, 0}, false, true}, // short
		{[]byte{5}, false, true},
		{nil, false, true},
	}
	for _, tt := range tests {
		noAuth, err := readGreeting(bytes.NewReader(tt.in))
		if noAuth != tt.noAuth || (err != nil) != tt.wantErr {
			t.Errorf("readGreeting(%x) = %v, %v; want %v, error %v", tt.in, noAuth, err, tt.noAuth, tt.wantErr)
		}
	}
}

func TestReadRequest(t *testing.T) {
	tests := []struct {
		in    []byte
		host  string
		port  uint16
		reply int // -1: accepted; 0: closed without a reply; else the reply code
	}{
		{[]byte{5, 1, 0, 1, 203, 0, 113, 10, 0, 80}, "203.0.113.10", 80, -1},
		{append([]byte{5, 1, 0, 3, 11}, "example.com\x01\xbb"...), "example.com", 443, -1},
		{append([]byte{5, 1, 0, 4}, append(netip.MustParseAddr("2001:db8::1").AsSlice(), 0, 22)...), "2001:db8::1", 22, -1},
		{[]byte{5, 2, 0, 1, 1, 2, 3, 4, 0, 80}, "", 0, repCmdNotSupported}, // BIND
		{[]byte{5, 3, 0, 1, 1, 2, 3, 4, 0, 80}, "", 0, repCmdNotSupported}, // UDP ASSOCIATE
		{[]byte{5, 1, 0, 9, 1, 2, 3, 4, 0, 80}, "", 0, repAtypUnsupported},
		{[]byte{4, 1, 0, 1, 1, 2, 3, 4, 0, 80}, "", 0, 0},
		{[]byte{5, 1, 1, 1, 1, 2, 3, 4, 0, 80}, "", 0, 0},
		{[]byte{5, 1, 0, 3, 0, 0, 80}, "", 0, 0},
		{[]byte{5, 1, 0, 1, 1, 2, 3, 4, 0, 0}, "", 0, 0},
		{[]byte{5, 1, 0, 1, 1, 2}, "", 0, 0},
		{[]byte{5, 1, 0, 3, 20, 'a'}, "", 0, 0},
		{[]byte{5, 1, 0}, "", 0, 0},
	}
	for _, tt := range tests {
		req, err := readRequest(bytes.NewReader(tt.in))
		reply := -1
		if err != nil {
			var se *socksError
			reply = 0
			if errors.As(err, &se) {
				reply = int(se.reply)
			}
		}
		if reply != tt.reply || req.host != tt.host || req.port != tt.port {
			t.Errorf("readRequest(%x) = %+v, reply %d (%v); want %s:%d reply %d", tt.in, req, reply, err, tt.host, tt.port, tt.reply)
		}
	}
}

// socksConnect runs a SOCKS5 CONNECT to host:port and returns the reply code
// and the connection.
func socksConnect(t *testing.T, proxy string, req []byte) (byte, net.Conn) {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte{5, 1, 0}); err != nil {
		t.Fatal(err)
	}
	method := make([]byte, 2)
	if _, err := io.ReadFull(c, method); err != nil || method[1] != 0 {
		t.Fatalf("method reply %x, %v", method, err)
	}
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	reply := make([]byte, 10)
	if _, err := io.ReadFull(c, reply); err != nil {
		t.Fatalf("reading the reply: %v", err)
	}
	return reply[1], c
}

func domainRequest(host string, port int) []byte {
	b := append([]byte{5, 1, 0, 3, byte(len(host))}, host...)
	return append(b, byte(port>>8), byte(port))
}

func TestSOCKS5Server(t *testing.T) {
	echo := startEcho(t)
	_, portStr, _ := net.SplitHostPort(echo)
	port, _ := strconv.Atoi(portStr)
	ipReq := append([]byte{5, 1, 0, 1, 127, 0, 0, 1}, byte(port>>8), byte(port))
	tests := []struct {
		name  string
		allow []string
		req   []byte
		reply byte
	}{
		{"ip allowed by ip rule", []string{"127.0.0.1"}, ipReq, repSucceeded},
		{"ip in the floor", nil, ipReq, repNotAllowed},
		{"name allowed, ip rule", []string{"echo.test", "127.0.0.1"}, domainRequest("echo.test", port), repSucceeded},
		{"name allowed, floor", []string{"echo.test"}, domainRequest("echo.test", port), repNotAllowed},
		{"name denied", []string{"127.0.0.1"}, domainRequest("echo.test", port), repNotAllowed},
		{"ip as domain", []string{"127.0.0.1"}, domainRequest("127.0.0.1", port), repSucceeded},
		{"unresolvable", []string{"nx.test"}, domainRequest("nx.test", port), repHostUnreachable},
		{"bind", []string{"127.0.0.1"}, []byte{5, 2, 0, 1, 127, 0, 0, 1, 0, 80}, repCmdNotSupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newTestProxy(t, mustRules(t, ModeDeny, tt.allow, nil), map[string][]string{"echo.test.": {"127.0.0.1"}})
			addr := listen(t, p.Proxy, p.ServeSOCKS5)
			reply, c := socksConnect(t, addr, tt.req)
			if reply != tt.reply {
				t.Fatalf("reply %d, want %d", reply, tt.reply)
			}
			if reply != repSucceeded {
				return
			}
			if _, err := c.Write([]byte("ping")); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 4)
			if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
				t.Fatalf("echo: %q, %v", buf, err)
			}
		})
	}
}

func TestSOCKS5NoAcceptableMethod(t *testing.T) {
	p := newTestProxy(t, nil, nil)
	addr := listen(t, p.Proxy, p.ServeSOCKS5)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte{5, 1, 2})
	b, _ := io.ReadAll(c)
	if !bytes.Equal(b, []byte{5, 0xff}) {
		t.Fatalf("got %x, want 05ff and close", b)
	}
}
