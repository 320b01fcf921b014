// Command server is the test host of stockade's network end-to-end tests: run
// inside the network namespace that scripts/testnet.sh creates, it stands in
// for the Internet with addresses of TEST-NET-2 (198.51.100.0/24), which route
// nowhere outside this machine.
//
// It serves, on the addresses its flags name:
//
//	HTTP  -http  (198.51.100.10:80)   / → "hello from the test host", /big → 64 MiB,
//	                                 /repo.git/ → a dumb-HTTP git repository (if git exists)
//	HTTPS -https (198.51.100.10:443)  the same, with a self-signed certificate made at start
//	echo  -echo  (198.51.100.20:7)    TCP echo, a destination for SOCKS5 tests
//	DNS   -dns   (198.51.100.53:53)   UDP and TCP, the zone of records.go
//
// Every DNS query name it receives is appended to -querylog, one per line,
// so that a test can prove a name never left the sandbox's DNS stub. When
// every listener is bound it writes "ready" to -ready (a file or a FIFO).
//
// On the host names of the ecosystem presets (internal/egress) it serves
// one tiny package to each standard client (packages.go); its certificate
// names them all.
//
// It uses only the standard library, golang.org/x/net/dns/dnsmessage and
// the preset table of internal/egress, and builds static (CGO_ENABLED=0).
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	httpAddr := flag.String("http", "198.51.100.10:80", "HTTP listen address")
	httpsAddr := flag.String("https", "198.51.100.10:443", "HTTPS listen address")
	echoAddr := flag.String("echo", "198.51.100.20:7", "TCP echo listen address")
	dnsAddr := flag.String("dns", "198.51.100.53:53", "DNS listen address (UDP and TCP)")
	queryLog := flag.String("querylog", "/run/stk-testnet-queries.log", "file every DNS query name is appended to (made world-readable)")
	ready := flag.String("ready", "", "file or FIFO to write \"ready\" to when every listener is up")
	providerAddr := flag.String("provider", "198.51.100.10:8080", "fake model provider (Anthropic Messages API) listen address")
	providerLog := flag.String("providerlog", "/run/stk-testnet-provider.log", "file every provider request is recorded in (made world-readable)")
	flag.Parse()
	go func() {
		ln, err := net.Listen("tcp", *providerAddr)
		if err != nil {
			log.Fatal(err)
		}
		os.WriteFile(*providerLog, nil, 0o644)
		os.Chmod(*providerLog, 0o644)
		log.Fatal(serveHTTP(ln, &provider{log: *providerLog}))
	}()
	log.SetPrefix("stk-testnet: ")
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	if err := run(*httpAddr, *httpsAddr, *echoAddr, *dnsAddr, *queryLog, *ready); err != nil {
		log.Fatal(err)
	}
}

func run(httpAddr, httpsAddr, echoAddr, dnsAddr, queryLog, ready string) error {
	repoDir, err := os.MkdirTemp("", "stk-testnet-repo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(repoDir)
	if err := makeRepo(repoDir); err != nil {
		// The git rows skip when the repository is not served; the rest still works.
		log.Printf("no git repository: %v", err)
	}
	qlog, err := openQueryLog(queryLog)
	if err != nil {
		return err
	}
	defer qlog.Close()
	cert, err := selfSigned()
	if err != nil {
		return fmt.Errorf("making the certificate: %w", err)
	}

	// Bind everything first, so that "ready" means every port answers.
	httpLn, err := net.Listen("tcp", httpAddr)
	if err != nil {
		return err
	}
	httpsLn, err := net.Listen("tcp", httpsAddr)
	if err != nil {
		return err
	}
	echoLn, err := net.Listen("tcp", echoAddr)
	if err != nil {
		return err
	}
	dnsUDP, err := net.ListenPacket("udp", dnsAddr)
	if err != nil {
		return err
	}
	dnsTCP, err := net.Listen("tcp", dnsAddr)
	if err != nil {
		return err
	}

	h, err := newHandler(repoDir)
	if err != nil {
		return err
	}
	errc := make(chan error, 5)
	go func() { errc <- serveHTTP(httpLn, h) }()
	go func() {
		errc <- serveHTTP(tls.NewListener(httpsLn, &tls.Config{Certificates: []tls.Certificate{cert}}), h)
	}()
	go func() { errc <- serveEcho(echoLn) }()
	go func() { errc <- serveDNSUDP(dnsUDP, qlog) }()
	go func() { errc <- serveDNSTCP(dnsTCP, qlog) }()
	log.Printf("listening: http %s, https %s, echo %s, dns %s; queries to %s", httpAddr, httpsAddr, echoAddr, dnsAddr, queryLog)
	if ready != "" {
		// A FIFO blocks here until testnet.sh reads it; a plain file does not.
		if err := os.WriteFile(ready, []byte("ready\n"), 0o644); err != nil {
			return fmt.Errorf("reporting ready on %s: %w", ready, err)
		}
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case s := <-sig:
		log.Printf("%v: exiting", s)
		return nil
	case err := <-errc:
		return err
	}
}

// serveEcho copies every connection back to itself: the far end of the
// SOCKS5 rows.
func serveEcho(ln net.Listener) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return fmt.Errorf("echo: %w", err)
		}
		go func() {
			defer c.Close()
			io.Copy(c, c)
		}()
	}
}
