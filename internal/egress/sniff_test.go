package egress

import (
	"crypto/tls"
	"net"
	"strings"
	"testing"
)

// TestSniff reads the name a client sends first, as the capture listener
// does, from real clients: Go's TLS ClientHello, with and without a server
// name, an HTTP request, and a client that sends nothing.
func TestSniff(t *testing.T) {
	tests := []struct {
		name     string
		send     func(net.Conn)
		wantName string
		wantKind string
	}{
		{"tls", func(c net.Conn) {
			tls.Client(c, &tls.Config{ServerName: "api.example.com", InsecureSkipVerify: true}).Handshake()
		}, "api.example.com", sniffTLS},
		{"tls_no_sni", func(c net.Conn) {
			tls.Client(c, &tls.Config{InsecureSkipVerify: true}).Handshake()
		}, "", sniffNone},
		{"http", func(c net.Conn) {
			c.Write([]byte("GET / HTTP/1.1\r\nUser-Agent: x\r\nhost: Example.COM:8080\r\n\r\n"))
		}, "Example.COM", sniffHTTP},
		{"http_v6", func(c net.Conn) {
			c.Write([]byte("GET / HTTP/1.1\r\nHost: [2001:db8::1]\r\n\r\n"))
		}, "2001:db8::1", sniffHTTP},
		{"http_split", func(c net.Conn) {
			c.Write([]byte("GET / HTTP/1.1\r\nHo")) // a pipe delivers each write apart
			c.Write([]byte("st: split.example\r\n\r\n"))
		}, "split.example", sniffHTTP},
		{"silent", func(c net.Conn) {}, "", sniffNone},
		{"ssh", func(c net.Conn) { c.Write([]byte("SSH-2.0-OpenSSH_9.2\r\n")) }, "", sniffNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, server := net.Pipe()
			defer client.Close()
			go tt.send(client)
			prefix, name, kind := sniff(server)
			server.Close()
			if name != tt.wantName || kind != tt.wantKind {
				t.Errorf("sniff = %q, %q; want %q, %q", name, kind, tt.wantName, tt.wantKind)
			}
			if tt.wantKind == sniffHTTP && !strings.HasSuffix(string(prefix), "\r\n\r\n") {
				t.Errorf("prefix %q is not the whole header", prefix)
			}
		})
	}
}

// TestClientHelloNameTruncated: every truncation of a real ClientHello is
// parsed without a panic, and names nothing or the name itself.
func TestClientHelloNameTruncated(t *testing.T) {
	client, server := net.Pipe()
	go tls.Client(client, &tls.Config{ServerName: "a.example", InsecureSkipVerify: true}).Handshake()
	prefix, name, _ := sniff(server)
	client.Close()
	server.Close()
	if name != "a.example" {
		t.Fatalf("name %q", name)
	}
	for i := range prefix {
		if got := clientHelloName(prefix[:i]); got != "" && got != "a.example" {
			t.Fatalf("truncated at %d: %q", i, got)
		}
	}
}
