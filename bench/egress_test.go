package bench

import (
	"bufio"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/internal/egress"
)

// proxyFixture is an egress proxy on loopback in front of a loopback server,
// with an explicit 127.0.0.1 rule (the floor refuses loopback otherwise):
// what the sandbox's proxy listener does, minus the namespace, which adds
// no hop (the listener is a socket the supervisor accepts on directly).
type proxyFixture struct {
	proxy, echo, web string
	px               *egress.Proxy
}

func newProxyFixture(b *testing.B, body []byte) *proxyFixture {
	b.Helper()
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 64<<10)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						c.Write(buf[:n])
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	web := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) })}
	wl, _ := net.Listen("tcp", "127.0.0.1:0")
	go web.Serve(wl)
	rule, _ := egress.ParseRule("127.0.0.1")
	px := egress.New(egress.Config{Session: "bench1", Rules: egress.NewRules(egress.ModeDeny, []egress.Rule{rule}, nil)})
	pl, _ := net.Listen("tcp", "127.0.0.1:0")
	go px.ServeHTTPProxy(pl)
	b.Cleanup(func() { px.Close(); echo.Close(); web.Close() })
	return &proxyFixture{proxy: pl.Addr().String(), echo: echo.Addr().String(), web: wl.Addr().String(), px: px}
}

// tunnel opens a CONNECT tunnel to addr.
func (f *proxyFixture) tunnel(addr string) (net.Conn, error) {
	c, err := net.Dial("tcp", f.proxy)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", addr, addr)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != 200 {
		c.Close()
		return nil, fmt.Errorf("CONNECT %s: %v %v", addr, resp, err)
	}
	return c, nil
}

// BenchmarkEgress compares, side by side, a direct loopback connection with
// the same one through the egress proxy (bench/README.md: throughput at least
// 80% of direct, under 0.5 ms added to the median round trip), and holds
// 1000 CONNECT tunnels at once, checking that none fails and no descriptor
// leaks.
func BenchmarkEgress(b *testing.B) {
	body := make([]byte, 64<<20)
	for i := range body {
		body[i] = byte(i * 7)
	}
	f := newProxyFixture(b, body)
	want := sha256.Sum256(body)

	// Throughput: download the 64 MiB body, alternating direct and proxied.
	download := func(viaProxy bool) (time.Duration, error) {
		var c net.Conn
		var err error
		if viaProxy {
			c, err = f.tunnel(f.web)
		} else {
			c, err = net.Dial("tcp", f.web)
		}
		if err != nil {
			return 0, err
		}
		defer c.Close()
		start := time.Now()
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return 0, err
		}
		h := sha256.New()
		io.Copy(h, resp.Body)
		if [32]byte(h.Sum(nil)) != want {
			return 0, fmt.Errorf("body differs")
		}
		return time.Since(start), nil
	}
	// Round trip: 1 KiB ping-pong on an open connection.
	pingpong := func(c net.Conn) (time.Duration, error) {
		msg := make([]byte, 1024)
		start := time.Now()
		if _, err := c.Write(msg); err != nil {
			return 0, err
		}
		if _, err := io.ReadFull(c, msg); err != nil {
			return 0, err
		}
		return time.Since(start), nil
	}
	rounds := max(b.N, 5)
	var dDirect, dProxy []time.Duration
	for i := range rounds {
		for _, via := range []bool{i%2 == 0, i%2 != 0} {
			d, err := download(via)
			if err != nil {
				b.Fatal(err)
			}
			if via {
				dProxy = append(dProxy, d)
			} else {
				dDirect = append(dDirect, d)
			}
		}
	}
	direct, err := net.Dial("tcp", f.echo)
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	proxied, err := f.tunnel(f.echo)
	if err != nil {
		b.Fatal(err)
	}
	defer proxied.Close()
	var rDirect, rProxy []time.Duration
	for i := range 2000 {
		for _, c := range []net.Conn{direct, proxied} {
			if i%2 == 1 {
				c = map[net.Conn]net.Conn{direct: proxied, proxied: direct}[c]
			}
			d, err := pingpong(c)
			if err != nil {
				b.Fatal(err)
			}
			if c == proxied {
				rProxy = append(rProxy, d)
			} else {
				rDirect = append(rDirect, d)
			}
		}
	}
	mb := float64(len(body)) / (1 << 20)
	tDirect := mb / Median(dDirect).Seconds()
	tProxy := mb / Median(dProxy).Seconds()
	added := Median(rProxy) - Median(rDirect)
	b.ReportMetric(tProxy/tDirect*100, "throughput-%")
	b.ReportMetric(float64(added.Microseconds())/1000, "added-p50-ms")

	// 1000 tunnels held at once.
	fds := countFDs()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	var failed int
	for range 1000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := f.tunnel(f.echo)
			if err == nil {
				if _, err = pingpong(c); err != nil {
					c.Close()
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed++
				return
			}
			conns = append(conns, c)
		}()
	}
	wg.Wait()
	held := len(conns)
	for _, c := range conns {
		c.Close()
	}
	leaked := 0
	deadline := time.Now().Add(10 * time.Second)
	for {
		// The proxy closes its side after the client's close arrives;
		// no event tells this process when, so poll the count.
		leaked = countFDs() - fds
		if leaked <= 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.ReportMetric(float64(failed), "tunnels-failed")
	b.Logf("64 MiB download over %d rounds: direct %.0f MiB/s, through the proxy %.0f MiB/s (%.1f%%; target >= 80%%); 1 KiB round trip p50: direct %s, proxied %s, added %s (target < 0.5 ms); 1000 tunnels: %d held, %d failed, %d descriptors left over",
		rounds, tDirect, tProxy, tProxy/tDirect*100, Median(rDirect), Median(rProxy), added, held, failed, max(leaked, 0))
	if failed > 0 || leaked > 0 {
		b.Errorf("%d tunnels failed, %d descriptors leaked", failed, leaked)
	}
	_ = context.Background
}

func countFDs() int {
	ents, _ := os.ReadDir("/proc/self/fd")
	return len(ents)
}

var _ = strings.TrimSpace
