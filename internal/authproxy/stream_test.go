package authproxy

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestNoKeyInResponse: an upstream that echoes the request's headers in its
// own headers, trailers and body, split across flushes, gzip'd or not.
func TestNoKeyInResponse(t *testing.T) {
	echo := func(w http.ResponseWriter, r *http.Request) {
		var all strings.Builder
		for name, vals := range r.Header {
			for _, v := range vals {
				w.Header().Add("X-Echo-"+name, v)
				fmt.Fprintf(&all, "%s: %s\n", name, v)
			}
		}
		w.Header().Set("Trailer", "X-Echo-Trailer")
		w.Header().Set("Content-Type", "text/event-stream")
		var out io.Writer = w
		if r.URL.Query().Get("gzip") != "" && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			gz := gzip.NewWriter(w)
			defer gz.Close()
			out = gz
		}
		w.WriteHeader(200)
		s := all.String()
		for i := 0; i < len(s); i += 7 { // split keys across writes and flushes
			io.WriteString(out, s[i:min(i+7, len(s))])
			if gz, ok := out.(*gzip.Writer); ok {
				gz.Flush()
			}
			http.NewResponseController(w).Flush()
		}
		w.Header().Set("X-Echo-Trailer", strings.TrimSpace(all.String()[:strings.Index(all.String(), "\n")]))
	}
	up := startUpstream(t, echo)
	p := startProxy(t, allRoutes(t, up), nil)
	for _, tt := range []struct{ route, target, header string }{
		{"anthropic", "/anthropic/v1/messages", "X-Api-Key"},
		{"openai", "/openai/v1/responses", "Authorization"},
		{"google", "/google/v1beta/models/m:generateContent?key=sk-proxy", "X-Goog-Api-Key"},
		{"openai gzip", "/openai/v1/responses?gzip=1", "Authorization"},
		{"anthropic gzip", "/anthropic/v1/messages?gzip=1", "X-Api-Key"},
	} {
		t.Run(tt.route, func(t *testing.T) {
			name, _, _ := strings.Cut(tt.route, " ")
			h := hdr("Authorization", "Bearer sk-proxy", "Accept-Encoding", "gzip")
			if name == "google" {
				h = hdr("Accept-Encoding", "gzip")
			}
			resp, body := do(t, nil, "POST", p.base+tt.target, h, "{}")
			if resp.StatusCode != 200 || !strings.Contains(body, "*****") {
				t.Fatalf("status %d, body %q: want 200 and a masked key", resp.StatusCode, body)
			}
			key := keyOf(name)
			for k, v := range resp.Header {
				if strings.Contains(k+strings.Join(v, ""), key) {
					t.Errorf("header %s: %q has the key", k, v)
				}
			}
			for k, v := range resp.Trailer {
				if strings.Contains(k+strings.Join(v, ""), key) {
					t.Errorf("trailer %s: %q has the key", k, v)
				}
			}
			if strings.Contains(body, key) || strings.Contains(body, "K3Y") {
				t.Errorf("body has the key: %q", body)
			}
			if got := up.last(t).Header.Get(tt.header); !strings.Contains(got, key) {
				t.Errorf("upstream did not get the key in %s: %q", tt.header, got)
			}
		})
	}
}

// TestSSE: the upstream sends one event, flushes, and sends nothing more
// until the test has read that event through the proxy. Buffering anywhere
// would deadlock, which the timeout turns into a failure.
func TestSSE(t *testing.T) {
	release := make(chan struct{})
	up := startUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message_start\ndata: {\"n\":1}\n\n")
		http.NewResponseController(w).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "event: message_stop\ndata: {\"n\":2}\n\n")
	})
	p := startProxy(t, allRoutes(t, up), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := must(http.NewRequestWithContext(ctx, "POST", p.base+"/anthropic/v1/messages", strings.NewReader(`{"model":"m","stream":true}`)))
	req.Header.Set("X-Api-Key", "sk-proxy")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	first := readEvent(t, br)
	if first != "event: message_start\ndata: {\"n\":1}\n\n" {
		t.Fatalf("first event %q", first)
	}
	close(release)
	if second := readEvent(t, br); !strings.Contains(second, "message_stop") {
		t.Fatalf("second event %q", second)
	}
}

func readEvent(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	var ev strings.Builder
	for {
		line, err := br.ReadString('\n')
		ev.WriteString(line)
		if err != nil {
			t.Fatalf("reading an event (timed out if the proxy buffers): %v after %q", err, ev.String())
		}
		if line == "\n" {
			return ev.String()
		}
	}
}

// TestConcurrentStreams: 1000 streams are open at once (the upstream holds
// every one until all have arrived), and all complete.
func TestConcurrentStreams(t *testing.T) {
	const n = 1000
	var arrived atomic.Int64
	all := make(chan struct{})
	up := startUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: start\n\n")
		http.NewResponseController(w).Flush()
		if arrived.Add(1) == n {
			close(all)
		}
		select {
		case <-all:
		case <-r.Context().Done():
			return
		}
		for i := range 3 {
			fmt.Fprintf(w, "data: %d\n\n", i)
			http.NewResponseController(w).Flush()
		}
	})
	p := startProxy(t, allRoutes(t, up), nil)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			req := must(http.NewRequestWithContext(ctx, "POST", p.base+"/openai/v1/chat/completions", strings.NewReader(`{"model":"gpt"}`)))
			req.Header.Set("Authorization", "Bearer sk-proxy")
			resp, err := client.Do(req)
			if err != nil {
				errs <- fmt.Errorf("stream %d: %w", i, err)
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil || !strings.HasSuffix(string(b), "data: 2\n\n") {
				errs <- fmt.Errorf("stream %d: %q, %v", i, b, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	p.audit.waitFor(t, n)
}

func TestAudit(t *testing.T) {
	up := startUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "0123456789") })
	p := startProxy(t, allRoutes(t, up), nil)
	small := `{"max_tokens":5,"messages":[{"role":"user","content":"hi \"model\": x"}],"model":"claude-sonnet-4-5","stream":true}`
	big := `{"model":"gpt-5","input":"` + strings.Repeat("x", 2<<20) + `"}`
	tests := []struct {
		name, target, body, ctype, model, path string
	}{
		{"model after other keys", "/anthropic/v1/messages?beta=true", small, "application/json", "claude-sonnet-4-5", "/v1/messages"},
		{"body over 1 MiB", "/openai/v1/responses", big, "application/json", "gpt-5", "/v1/responses"},
		{"google model in path", "/google/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse&key=sk-proxy", `{"contents":[]}`, "application/json", "gemini-2.5-pro", "/v1beta/models/gemini-2.5-pro:streamGenerateContent"},
		{"not JSON", "/openai/v1/files", `{"model":"no"}`, "text/plain", "", "/v1/files"},
		{"broken JSON", "/openai/v1/chat/completions", `{"messages":[}`, "application/json", "", "/v1/chat/completions"},
		{"model with escapes", "/openai/v1/chat/completions", "{\"model\":\"a\\u001b[31mb\"}", "application/json", "a?[31mb", "/v1/chat/completions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := hdr("Content-Type", tt.ctype, "Authorization", "Bearer sk-proxy", "X-Api-Key", "sk-proxy")
			if strings.HasPrefix(tt.target, "/google") {
				h = hdr("Content-Type", tt.ctype)
			}
			before := len(p.audit.all())
			resp, body := do(t, nil, "POST", p.base+tt.target, h, tt.body)
			if resp.StatusCode != 200 || up.last(t).Body != tt.body {
				t.Fatalf("status %d; the upstream got a different body (%d bytes, want %d)", resp.StatusCode, len(up.last(t).Body), len(tt.body))
			}
			evs := p.audit.waitFor(t, before+1)[before:]
			if len(evs) != 1 || evs[0].name != EventRequest {
				t.Fatalf("events %v", evs)
			}
			f := evs[0].fields
			name, _, _ := strings.Cut(strings.TrimPrefix(tt.target, "/"), "/")
			want := map[string]any{"provider": name, "method": "POST", "path": tt.path, "status": 200,
				"request_bytes": int64(len(tt.body)), "response_bytes": int64(len(body))}
			for k, v := range want {
				if f[k] != v {
					t.Errorf("%s = %v (%T), want %v", k, f[k], f[k], v)
				}
			}
			if m, _ := f["model"].(string); m != tt.model {
				t.Errorf("model = %q, want %q", m, tt.model)
			}
			if d, ok := f["duration_ms"].(int64); !ok || d < 0 {
				t.Errorf("duration_ms = %v", f["duration_ms"])
			}
		})
	}
}

// TestClose: Close lets a stream in flight finish, and cuts one that does
// not finish within ShutdownTimeout.
func TestClose(t *testing.T) {
	for _, tt := range []struct {
		name    string
		finish  bool
		wantErr bool
	}{{"stream finishes", true, false}, {"stream stuck", false, true}} {
		t.Run(tt.name, func(t *testing.T) {
			started, finish := make(chan struct{}), make(chan struct{})
			up := startUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, "data: 1\n\n")
				http.NewResponseController(w).Flush()
				close(started)
				select {
				case <-finish:
					io.WriteString(w, "data: 2\n\n")
				case <-r.Context().Done():
				}
			})
			p := startProxy(t, allRoutes(t, up), func(c *Config) { c.ShutdownTimeout = 300 * time.Millisecond })
			got := make(chan string, 1)
			go func() {
				req := must(http.NewRequest("GET", p.base+"/openai/v1/x", nil))
				req.Header.Set("Authorization", "Bearer sk-proxy")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					got <- err.Error()
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				got <- string(b)
			}()
			<-started
			closed := make(chan error, 1)
			go func() { closed <- p.Close() }()
			if tt.finish {
				close(finish)
			}
			if err := <-closed; (err != nil) != tt.wantErr {
				t.Errorf("Close: %v", err)
			}
			if body := <-got; tt.finish && body != "data: 1\n\ndata: 2\n\n" {
				t.Errorf("the stream was cut: %q", body)
			}
		})
	}
}

// TestAuditCutStream: an agent that closes the connection in the middle of
// a streamed answer (as Codex does once it has the completed event) still
// leaves its request in the audit log, with the error. The ReverseProxy
// ends such a handler with panic(http.ErrAbortHandler), which used to skip
// the event.
func TestAuditCutStream(t *testing.T) {
	closed := make(chan struct{})
	up := startUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: response.completed\ndata: {}\n\n")
		http.NewResponseController(w).Flush()
		<-closed
		// Until the proxy gives up on its client: a write then fails at
		// the proxy, or the proxy cancels this request.
		for r.Context().Err() == nil {
			if _, err := io.WriteString(w, "data: more\n\n"); err != nil {
				return
			}
			if http.NewResponseController(w).Flush() != nil {
				return
			}
		}
	})
	p := startProxy(t, allRoutes(t, up), nil)
	conn, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"model":"m","stream":true}`
	fmt.Fprintf(conn, "POST /openai/v1/responses HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer sk-proxy\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", p.addr, len(body), body)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ev := readEvent(t, bufio.NewReader(resp.Body)); !strings.Contains(ev, "response.completed") {
		t.Fatalf("first event %q", ev)
	}
	conn.Close()
	close(closed)
	ev := p.audit.waitFor(t, 1)[0]
	if ev.name != EventRequest || ev.fields["status"] != 200 || ev.fields["error"] == nil || ev.fields["request_bytes"] != int64(len(body)) {
		t.Errorf("the cut stream's event: %s %v", ev.name, ev.fields)
	}
}
