package authproxy

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// benchSetup starts an upstream serving handle, and a proxy in front of it
// with the anthropic route; it returns the direct and the proxied base URL.
func benchSetup(b *testing.B, handle http.HandlerFunc) (direct, proxied string, client *http.Client) {
	b.Helper()
	up := httptest.NewServer(handle)
	b.Cleanup(up.Close)
	u := must(url.Parse(up.URL))
	p := startProxy(b, map[string]Route{"anthropic": {Upstream: u, Key: keyOf("anthropic"), Style: XAPIKey}},
		func(c *Config) { c.Audit = nil })
	tr := &http.Transport{MaxIdleConnsPerHost: 16, DisableCompression: true}
	b.Cleanup(tr.CloseIdleConnections)
	return up.URL, p.base + "/anthropic", &http.Client{Transport: tr}
}

// BenchmarkFirstByte: time from sending a streamed request to reading the
// first byte of the answer, directly and through the proxy, alternately, on
// kept-alive connections. added-p50-µs is what the proxy costs.
func BenchmarkFirstByte(b *testing.B) {
	direct, proxied, client := benchSetup(b, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message_start\ndata: {}\n\n")
		http.NewResponseController(w).Flush()
		for range 3 {
			io.WriteString(w, "event: content_block_delta\ndata: {\"text\":\"hello\"}\n\n")
		}
	})
	body := `{"model":"claude-sonnet-4-5","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	firstByte := func(base string) time.Duration {
		req := must(http.NewRequest("POST", base+"/v1/messages", strings.NewReader(body)))
		req.Header.Set("X-Api-Key", "sk-proxy")
		req.Header.Set("Content-Type", "application/json")
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		var one [1]byte
		if _, err := io.ReadFull(resp.Body, one[:]); err != nil {
			b.Fatal(err)
		}
		d := time.Since(start)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return d
	}
	firstByte(direct) // open the kept-alive connections
	firstByte(proxied)
	var ds, ps []time.Duration
	for b.Loop() {
		ds = append(ds, firstByte(direct))
		ps = append(ps, firstByte(proxied))
	}
	p50 := func(s []time.Duration) float64 {
		slices.Sort(s)
		return float64(s[len(s)/2].Nanoseconds()) / 1e3
	}
	var sum time.Duration
	for i := range ds {
		sum += ps[i] - ds[i]
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(sum.Nanoseconds())/1e3/float64(len(ds)), "added-mean-µs")
	d, p := p50(ds), p50(ps)
	b.ReportMetric(d, "direct-p50-µs")
	b.ReportMetric(p, "proxy-p50-µs")
	b.ReportMetric(p-d, "added-p50-µs")
}

// BenchmarkThroughput: a 16 MiB streamed answer, directly and through the
// proxy (which scrubs it for the key as it goes).
func BenchmarkThroughput(b *testing.B) {
	const size = 16 << 20
	chunk := bytes.Repeat([]byte("data: {\"type\":\"content_block_delta\",\"text\":\"lorem ipsum\"}\n\n"), 512)
	direct, proxied, client := benchSetup(b, func(w http.ResponseWriter, r *http.Request) {
		for n := 0; n < size; n += len(chunk) {
			w.Write(chunk[:min(len(chunk), size-n)])
		}
	})
	for _, bb := range []struct{ name, base string }{{"direct", direct}, {"proxy", proxied}} {
		b.Run(bb.name, func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				req := must(http.NewRequest("GET", bb.base+"/v1/files/x", nil))
				req.Header.Set("X-Api-Key", "sk-proxy")
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				n, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || n != size {
					b.Fatalf("read %d bytes: %v", n, err)
				}
			}
		})
	}
}
