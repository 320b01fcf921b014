package bench

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
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
	size             int64
	px               *egress.Proxy
}

// newProxyFixture serves body from a file, as a web server does: with a
// Content-Length and sendfile(2), so that the direct side runs as fast as
// the kernel's loopback and a slow server cannot hide a slow proxy.
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
	path := filepath.Join(b.TempDir(), "body")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		b.Fatal(err)
	}
	web := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := os.Open(path)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer f.Close()
		http.ServeContent(w, r, "", time.Time{}, f) // io.Copy from the file: sendfile
	})}
	wl, _ := net.Listen("tcp", "127.0.0.1:0")
	go web.Serve(wl)
	rule, _ := egress.ParseRule("127.0.0.1")
	px := egress.New(egress.Config{Session: "bench1", Rules: egress.NewRules(egress.ModeDeny, []egress.Rule{rule}, nil)})
	pl, _ := net.Listen("tcp", "127.0.0.1:0")
	go px.ServeHTTPProxy(pl)
	b.Cleanup(func() { px.Close(); echo.Close(); web.Close() })
	return &proxyFixture{proxy: pl.Addr().String(), echo: echo.Addr().String(), web: wl.Addr().String(),
		size: int64(len(body)), px: px}
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

// The three ways a download goes, measured in the same rounds.
const (
	viaDirect  = iota // to the server
	viaConnect        // through a CONNECT tunnel of the proxy
	viaForward        // as a plain-HTTP request the proxy forwards
	viaCount
)

var viaNames = [viaCount]string{"direct", "connect", "forward"}

// cpuTime is the user and system CPU time this process has used so far:
// the client, the server and the proxy all run in it.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// download fetches the body once by way via and returns the time from the
// request to the last byte. The client reads the way curl does: 1 MiB reads
// straight from the socket into one reused buffer, nothing done per byte,
// so it is the same on every side and never the bottleneck. check hashes
// the body too (untimed rounds only).
func (f *proxyFixture) download(via int, buf []byte, check *[32]byte) (time.Duration, error) {
	addr, target := f.web, "/"
	switch via {
	case viaConnect:
		addr = ""
	case viaForward:
		addr, target = f.proxy, "http://"+f.web+"/"
	}
	var c net.Conn
	var err error
	if addr == "" {
		c, err = f.tunnel(f.web)
	} else {
		c, err = net.Dial("tcp", addr)
	}
	if err != nil {
		return 0, err
	}
	defer c.Close()
	start := time.Now()
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, f.web)
	// A body read larger than the bufio buffer bypasses it.
	resp, err := http.ReadResponse(bufio.NewReaderSize(c, 64<<10), nil)
	if err != nil {
		return 0, err
	}
	var h hash.Hash
	var n int64
	for {
		k, err := resp.Body.Read(buf)
		n += int64(k)
		if h != nil {
			h.Write(buf[:k])
		} else if check != nil {
			h = sha256.New()
			h.Write(buf[:k])
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("%s: reading the body after %d bytes: %w", viaNames[via], n, err)
		}
	}
	d := time.Since(start)
	if n != f.size {
		return 0, fmt.Errorf("%s: %d bytes, want %d", viaNames[via], n, f.size)
	}
	if check != nil && [32]byte(h.Sum(nil)) != *check {
		return 0, fmt.Errorf("%s: the body differs", viaNames[via])
	}
	return d, nil
}

// BenchmarkEgress compares, side by side, a direct loopback download with
// the same one through a CONNECT tunnel and as a plain-HTTP request the
// proxy forwards (bench/README.md: throughput at least 80% of direct for
// each, under 0.5 ms added to the median round trip), and holds 1000 CONNECT
// tunnels at once, checking that none fails and no descriptor leaks.
func BenchmarkEgress(b *testing.B) {
	body := make([]byte, 64<<20)
	for i := range body {
		body[i] = byte(i * 7)
	}
	f := newProxyFixture(b, body)
	want := sha256.Sum256(body)
	buf := make([]byte, 1<<20)

	// Every way once, hashed, untimed: the proxy must deliver the body
	// intact before its speed means anything.
	for via := range viaCount {
		if _, err := f.download(via, buf, &want); err != nil {
			b.Fatal(err)
		}
	}
	// Throughput: download the 64 MiB body every way in every round, the
	// order rotating, so that each way goes first as often as the others.
	rounds := max(b.N, 5)
	// The CPU time of each download is measured too: other tenants of the
	// machine disturb it much less than wall time, and it shows what the
	// proxy costs even when the wall clock is dominated by waiting for a
	// core.
	var times, cpus [viaCount][]time.Duration
	for i := range rounds {
		for k := range viaCount {
			via := (i + k) % viaCount
			c0 := cpuTime()
			d, err := f.download(via, buf, nil)
			if err != nil {
				b.Fatal(err)
			}
			times[via] = append(times[via], d)
			cpus[via] = append(cpus[via], cpuTime()-c0)
		}
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
	var rate [viaCount]float64
	for via := range viaCount {
		rate[via] = mb / Median(times[via]).Seconds()
	}
	added := Median(rProxy) - Median(rDirect)
	b.ReportMetric(rate[viaConnect]/rate[viaDirect], "connect-ratio")
	b.ReportMetric(rate[viaForward]/rate[viaDirect], "forward-ratio")
	b.ReportMetric(rate[viaDirect], "direct-MiB/s")
	cpuRatio := func(via int) float64 { return Ratio(Median(cpus[via]), Median(cpus[viaDirect])) }
	b.ReportMetric(cpuRatio(viaConnect), "connect-cpu-x")
	b.ReportMetric(cpuRatio(viaForward), "forward-cpu-x")
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
	b.Logf("64 MiB download over %d rounds: direct %.0f MiB/s, CONNECT %.0f MiB/s (%.2f of direct), plain-HTTP forward %.0f MiB/s (%.2f; target >= 0.80 each); CPU per download: direct %s, CONNECT %.2fx, forward %.2fx; 1 KiB round trip p50: direct %s, proxied %s, added %s (target < 0.5 ms); 1000 tunnels: %d held, %d failed, %d descriptors left over",
		rounds, rate[viaDirect], rate[viaConnect], rate[viaConnect]/rate[viaDirect], rate[viaForward], rate[viaForward]/rate[viaDirect],
		Median(cpus[viaDirect]), cpuRatio(viaConnect), cpuRatio(viaForward),
		Median(rDirect), Median(rProxy), added, held, failed, max(leaked, 0))
	if failed > 0 || leaked > 0 {
		b.Errorf("%d tunnels failed, %d descriptors leaked", failed, leaked)
	}
}

func countFDs() int {
	ents, _ := os.ReadDir("/proc/self/fd")
	return len(ents)
}
