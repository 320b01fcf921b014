package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/internal/ocihook"
)

// fakePodman serves what the filter must pass on: the query it got, a
// streamed answer, and the two ways the Docker API takes a connection
// over. It records every request that reached it.
type fakePodman struct {
	mu   sync.Mutex
	seen []string
	// gate holds a stream after its first line until the client read it.
	gate chan struct{}
}

func (p *fakePodman) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.seen = append(p.seen, r.Method+" "+r.URL.RequestURI())
	p.mu.Unlock()
	switch {
	case strings.HasSuffix(r.URL.Path, "/stream"):
		fl := w.(http.Flusher)
		for i := range 3 {
			fmt.Fprintf(w, "line %d\n", i)
			fl.Flush()
			if i == 0 {
				select {
				case <-p.gate:
				case <-time.After(5 * time.Second):
					return
				}
			}
		}
	case strings.HasSuffix(r.URL.Path, "/attach"):
		conn, brw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		if r.Header.Get("Upgrade") == "tcp" {
			io.WriteString(conn, "HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
		} else {
			io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.docker.raw-stream\r\n\r\n")
		}
		// Echo the client's stream, upper-cased, until it half-closes.
		b, _ := io.ReadAll(brw)
		conn.Write([]byte(strings.ToUpper(string(b))))
	case strings.HasSuffix(r.URL.Path, "/json") && strings.Contains(r.URL.Path, "/containers/"):
		name := strings.Split(r.URL.Path, "/")[4]
		id := strings.Repeat("a", 64)
		mounts := `[]`
		switch name {
		case "bound":
			id, mounts = strings.Repeat("b", 64), `[{"Type":"volume","Destination":"/v"},{"Type":"bind","Destination":"/host"}]`
		case "vol":
			mounts = `[{"Type":"volume","Destination":"/v"}]`
		case "gone":
			http.Error(w, `{"message":"no such container"}`, http.StatusNotFound)
			return
		}
		fmt.Fprintf(w, `{"Id":%q,"Mounts":%s}`, id, mounts)
	case strings.HasSuffix(r.URL.Path, "/archive"):
		fmt.Fprintf(w, "archive %s", r.URL.Path)
	case strings.HasSuffix(r.URL.Path, "/upload"):
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "%d bytes", n)
	default:
		fmt.Fprintf(w, "query %s", r.URL.RawQuery)
	}
}

func (p *fakePodman) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

// startFilter serves a filter in front of a fakePodman; it returns the
// filter's address, the fake, and the refusals heard.
func startFilter(t *testing.T) (string, *fakePodman, func() []ocihook.Report) {
	t.Helper()
	return startFilterConns(t, 0)
}

func startFilterConns(t *testing.T, conns int) (string, *fakePodman, func() []ocihook.Report) {
	t.Helper()
	dir := t.TempDir()
	up, err := net.Listen("unix", filepath.Join(dir, "podman.sock"))
	if err != nil {
		t.Fatal(err)
	}
	fake := &fakePodman{gate: make(chan struct{})}
	srv := &http.Server{Handler: fake}
	go srv.Serve(up)
	t.Cleanup(func() { srv.Close() })
	ln, err := net.Listen("unix", filepath.Join(dir, "engine.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var mu sync.Mutex
	var heard []ocihook.Report
	f := &apiFilter{
		conns: conns,
		dial:  func() (net.Conn, error) { return net.Dial("unix", filepath.Join(dir, "podman.sock")) },
		refused: func(r ocihook.Report) {
			mu.Lock()
			heard = append(heard, r)
			mu.Unlock()
		},
	}
	go f.serve(ln)
	return ln.Addr().String(), fake, func() []ocihook.Report {
		mu.Lock()
		defer mu.Unlock()
		return append([]ocihook.Report(nil), heard...)
	}
}

// client is an HTTP client that speaks to the filter's socket.
func client(sock string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(context.Context, string, string) (net.Conn, error) { return net.Dial("unix", sock) },
	}}
}

// raw sends req's bytes on a fresh connection and returns all it gets back.
func raw(t *testing.T, sock, req string) string {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	c.(*net.UnixConn).CloseWrite()
	b, _ := io.ReadAll(c)
	return string(b)
}

func TestAPIFilterIsolation(t *testing.T) {
	sock, fake, heard := startFilter(t)
	refused := []string{
		"/v4.0.0/libpod/build?isolation=chroot",
		"/v4.0.0/libpod/build?isolation=2",
		"/v4.0.0/libpod/build?isolation=CHROOT",
		"/v4.0.0/libpod/build?Isolation=chroot",
		"/v4.0.0/libpod/build?ISOLATION=chroot",
		"/v4.0.0/libpod/build?i%C5%BFolation=chroot", // ſ folds to s
		"/v4.0.0/libpod/build?isol%61tion=chroot",
		"/v4.0.0/libpod/build?isolation=oci&isolation=chroot",
		"/v4.0.0/libpod/build?isolation=%2B2",
		"/v4.0.0/libpod/build?isolation=02",
		"/v4.0.0/libpod/build?isolation=+2",
		"/v4.0.0/libpod/build?isolation=4",
		"/v4.0.0/libpod/build?t=x;isolation=chroot",
		"/build?isolation=chroot",
		"/libpod/build?isolation=chroot",
	}
	for _, uri := range refused {
		out := raw(t, sock, "POST "+uri+" HTTP/1.1\r\nHost: d\r\nContent-Length: 0\r\n\r\n")
		if !strings.HasPrefix(out, "HTTP/1.1 403 ") || !strings.Contains(out, `"message":"stockade refused the request`) {
			t.Errorf("%s: want a 403 with podman's error body, got %q", uri, out)
		}
	}
	if got := fake.requests(); len(got) != 0 {
		t.Errorf("refused requests reached podman: %q", got)
	}
	if got := heard(); len(got) != len(refused) {
		t.Errorf("heard %d refusals, want %d: %+v", len(got), len(refused), got)
	} else if got[0].Check != "isolation" {
		t.Errorf("refusal check = %q, want isolation", got[0].Check)
	}
	allowed := []string{
		"/v4.0.0/libpod/build?isolation=oci",
		"/v4.0.0/libpod/build?isolation=1",
		"/v4.0.0/libpod/build?isolation=3",
		"/v4.0.0/libpod/build?isolation=0",
		"/v4.0.0/libpod/build?isolation=rootless",
		"/v4.0.0/libpod/build?isolation=",
		"/v4.0.0/libpod/build?t=img&isolation=default",
		"/build?t=img",
	}
	for _, uri := range allowed {
		out := raw(t, sock, "POST "+uri+" HTTP/1.1\r\nHost: d\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		if !strings.HasPrefix(out, "HTTP/1.1 200 ") {
			t.Errorf("%s: want 200, got %q", uri, out)
		}
	}
	if got := fake.requests(); len(got) != len(allowed) {
		t.Errorf("podman got %d requests, want %d: %q", len(got), len(allowed), got)
	}
}

// A second request on a kept-alive connection is judged as the first was,
// and podman gets the query as it was judged, re-encoded.
func TestAPIFilterEveryRequest(t *testing.T) {
	sock, fake, _ := startFilter(t)
	out := raw(t, sock, "GET /v4.0.0/libpod/info?a=%41 HTTP/1.1\r\nHost: d\r\n\r\n"+
		"POST /v4.0.0/libpod/build?isolation=chroot HTTP/1.1\r\nHost: d\r\nContent-Length: 0\r\n\r\n"+
		"GET /v4.0.0/libpod/info HTTP/1.1\r\nHost: d\r\n\r\n")
	if !strings.Contains(out, "query a=A") || !strings.Contains(out, "HTTP/1.1 403 ") {
		t.Errorf("want the first answered and the second refused, got %q", out)
	}
	if got := fake.requests(); len(got) != 1 || got[0] != "GET /v4.0.0/libpod/info?a=A" {
		t.Errorf("podman got %q, want the first request alone, its query re-encoded", got)
	}
	// A body that hides a request is the body, never a request.
	body := "POST /v4.0.0/libpod/build?isolation=chroot HTTP/1.1\r\nHost: d\r\nContent-Length: 0\r\n\r\n"
	out = raw(t, sock, fmt.Sprintf("POST /v4.0.0/upload HTTP/1.1\r\nHost: d\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body))
	if !strings.Contains(out, fmt.Sprintf("%d bytes", len(body))) {
		t.Errorf("want the body passed on whole, got %q", out)
	}
	// A chunked body too.
	out = raw(t, sock, "POST /v4.0.0/upload HTTP/1.1\r\nHost: d\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
	if !strings.Contains(out, "5 bytes") {
		t.Errorf("want the chunked body passed on, got %q", out)
	}
}

func TestAPIFilterCheckpoint(t *testing.T) {
	sock, fake, heard := startFilter(t)
	for _, uri := range []string{
		"/v4.0.0/libpod/containers/c/checkpoint",
		"/v4.0.0/libpod/containers/c/restore?import=1",
		"/libpod/containers/c/restore",
		"/v4.0.0/libpod/containers/x/../c/restore",
		"/v4.0.0/libpod/containers/c/%72estore",
		"/v4.0.0/libpod/containers/x%2Fy/restore?import=1",
		"/v4.0.0/libpod/containers/x%2fy/checkpoint",
	} {
		out := raw(t, sock, "POST "+uri+" HTTP/1.1\r\nHost: d\r\nContent-Length: 0\r\n\r\n")
		if !strings.HasPrefix(out, "HTTP/1.1 403 ") {
			t.Errorf("%s: want 403, got %q", uri, out)
		}
	}
	if got := fake.requests(); len(got) != 0 {
		t.Errorf("refused requests reached podman: %q", got)
	}
	if got := heard(); len(got) != 7 || got[0].Check != "checkpoint" {
		t.Errorf("heard %+v, want 7 checkpoint refusals", got)
	}
	// A container named restore is no restore.
	out := raw(t, sock, "GET /v4.0.0/libpod/containers/restore/json HTTP/1.1\r\nHost: d\r\nConnection: close\r\n\r\n")
	if !strings.HasPrefix(out, "HTTP/1.1 200 ") {
		t.Errorf("want 200 for a container named restore, got %q", out)
	}
}

func TestAPIFilterMalformed(t *testing.T) {
	sock, fake, _ := startFilter(t)
	for _, req := range []string{
		"GARBAGE\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: d\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
		"GET /" + strings.Repeat("a", maxAPIHeader+10) + " HTTP/1.1\r\n\r\n",
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
	} {
		out := raw(t, sock, req)
		if !strings.HasPrefix(out, "HTTP/1.1 400 ") || !strings.Contains(out, "stockade: a request to the container engine") {
			t.Errorf("%.40q: want one 400 naming the request, got %.200q", req, out)
		}
	}
	if got := fake.requests(); len(got) != 0 {
		t.Errorf("malformed requests reached podman: %q", got)
	}
}

// What podman streams reaches the client as it comes, and a connection
// podman takes over (attach, exec) is relayed both ways.
func TestAPIFilterStreams(t *testing.T) {
	sock, fake, _ := startFilter(t)
	resp, err := client(sock).Get("http://d/v4.0.0/events/stream")
	if err != nil {
		t.Fatal(err)
	}
	// The first line must arrive while podman holds the rest back.
	first := make(chan string, 1)
	br := bufio.NewReader(resp.Body)
	go func() { line, _ := br.ReadString('\n'); first <- line }()
	select {
	case line := <-first:
		if line != "line 0\n" {
			t.Fatalf("first line %q", line)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the first line of a stream did not pass the filter before the stream went on")
	}
	close(fake.gate)
	rest, _ := io.ReadAll(br)
	resp.Body.Close()
	if string(rest) != "line 1\nline 2\n" {
		t.Errorf("rest of the stream %q", rest)
	}
	for _, upgrade := range []bool{true, false} {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		hdr := ""
		if upgrade {
			hdr = "Connection: Upgrade\r\nUpgrade: tcp\r\n"
		}
		fmt.Fprintf(c, "POST /v1.41/containers/c/attach?stream=1&stdin=1 HTTP/1.1\r\nHost: d\r\n%s\r\n", hdr)
		br := bufio.NewReader(c)
		status, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		want := "HTTP/1.1 200 OK\r\n"
		if upgrade {
			want = "HTTP/1.1 101 UPGRADED\r\n"
		}
		if status != want {
			t.Errorf("upgrade %v: status %q, want %q", upgrade, status, want)
		}
		for {
			line, err := br.ReadString('\n')
			if err != nil || line == "\r\n" {
				break
			}
		}
		io.WriteString(c, "stdin bytes")
		c.(*net.UnixConn).CloseWrite()
		got, _ := io.ReadAll(br)
		c.Close()
		if string(got) != "STDIN BYTES" {
			t.Errorf("upgrade %v: relayed %q, want STDIN BYTES", upgrade, got)
		}
	}
}

// The refusal is one JSON error a client prints.
func TestAPIFilterRefusalBody(t *testing.T) {
	sock, _, _ := startFilter(t)
	resp, err := client(sock).Post("http://d/v4.0.0/libpod/build?isolation=chroot", "application/x-tar", strings.NewReader(strings.Repeat("x", 1<<20)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Message  string `json:"message"`
		Response int    `json:"response"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 403 || e.Response != 403 || !strings.Contains(e.Message, `isolation "chroot"`) || !strings.Contains(e.Message, "default isolation") {
		t.Errorf("got %d %+v", resp.StatusCode, e)
	}
}

// Connections beyond the cap are answered at once, and the cap frees as
// connections end.
func TestAPIFilterConnCap(t *testing.T) {
	sock, _, _ := startFilterConns(t, 2)
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	time.Sleep(50 * time.Millisecond) // both accepted
	out := raw(t, sock, "GET /v4.0.0/libpod/info HTTP/1.1\r\nHost: d\r\n\r\n")
	if !strings.HasPrefix(out, "HTTP/1.1 503 ") || !strings.Contains(out, "serves 2 connections at once") {
		t.Errorf("over the cap: %q", out)
	}
	held[0].Close()
	time.Sleep(50 * time.Millisecond)
	out = raw(t, sock, "GET /v4.0.0/libpod/info HTTP/1.1\r\nHost: d\r\nConnection: close\r\n\r\n")
	if !strings.HasPrefix(out, "HTTP/1.1 200 ") {
		t.Errorf("after one closed: %q", out)
	}
	held[1].Close()
}

// What has podman run or read a thing of the client's on the engine's
// side is refused: build parameters, and secret drivers other than
// podman's own files, in the libpod API's query and the Docker API's body.
func TestAPIFilterEngineSide(t *testing.T) {
	sock, fake, heard := startFilter(t)
	post := func(uri, body string) string {
		return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: d\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", uri, len(body), body)
	}
	for _, req := range []string{
		"POST /v4.0.0/libpod/build?additionalbuildcontexts=%7B%22e%22%3A%7B%22Value%22%3A%22%2F%22%7D%7D HTTP/1.1\r\nHost: d\r\nContent-Length: 0\r\n\r\n",
		"POST /v4.0.0/libpod/build?AdditionalBuildContexts=x HTTP/1.1\r\nHost: d\r\nContent-Length: 0\r\n\r\n",
		"POST /v4.0.0/libpod/build?dockerfile=Containerfile.in&cppflags=%5B%22-fplugin%3D%2Fw%2Fe.so%22%5D HTTP/1.1\r\nHost: d\r\nContent-Length: 0\r\n\r\n",
		"POST /v4.0.0/libpod/build?rusagelogfile=/x HTTP/1.1\r\nHost: d\r\nContent-Length: 0\r\n\r\n",
		"POST /v4.0.0/libpod/secrets/create?name=s&driver=shell&driveropts=%7B%22store%22%3A%22id%22%7D HTTP/1.1\r\nHost: d\r\nContent-Length: 4\r\n\r\ndata",
		"POST /v4.0.0/libpod/secrets/create?name=s&DRIVER=pass HTTP/1.1\r\nHost: d\r\nContent-Length: 4\r\n\r\ndata",
		"POST /v4.0.0/libpod/secrets/create?name=s&driver=file&driveropts=%7B%22path%22%3A%22%2Fx%22%7D HTTP/1.1\r\nHost: d\r\nContent-Length: 4\r\n\r\ndata",
		post("/v1.41/secrets/create", `{"Name":"s","Data":"ZGF0YQ==","Driver":{"Name":"shell"}}`),
		post("/secrets/create", `{"name":"s","driver":{"name":"shell"}}`),
		post("/v1.41/secrets/create", `not {`),
		"POST /v4.0.0/libpod/build?remote=%2F HTTP/1.1\r\nHost: d\r\nContent-Length: 0\r\n\r\n",
		"POST /v4.0.0/libpod/build?REMOTE=%2Fstockade-engine HTTP/1.1\r\nHost: d\r\nContent-Length: 0\r\n\r\n",
		"POST /v4.0.0/libpod/build?secrets=%5B%22id%3D%2Fstockade-engine%2Ffacts.json%22%5D HTTP/1.1\r\nHost: d\r\nContent-Length: 0\r\n\r\n",
		"POST /v4.0.0/libpod/build?secrets=%5B%22id%3Ds%2Csrc%3D..%2F..%2F..%2Ftmp%22%5D HTTP/1.1\r\nHost: d\r\nContent-Length: 0\r\n\r\n",
		"POST /v4.0.0/libpod/build?Secrets=%5B%22id%3Ds%2Cenv%3DHOME%22%5D HTTP/1.1\r\nHost: d\r\nContent-Length: 0\r\n\r\n",
	} {
		out := raw(t, sock, req)
		if !strings.HasPrefix(out, "HTTP/1.1 403 ") {
			t.Errorf("%.70q: want 403, got %.200q", req, out)
		}
	}
	if got := fake.requests(); len(got) != 0 {
		t.Errorf("refused requests reached podman: %q", got)
	}
	if got := heard(); len(got) != 15 {
		t.Errorf("heard %d refusals, want 15", len(got))
	}
	// What podman's own clients send for a plain secret passes, the body
	// whole.
	for _, req := range []string{
		"POST /v4.0.0/libpod/secrets/create?name=s&driver=file&driveropts=%7B%7D HTTP/1.1\r\nHost: d\r\nContent-Length: 4\r\nConnection: close\r\n\r\ndata",
		post("/v1.41/secrets/create", `{"Name":"s","Data":"ZGF0YQ=="}`),
		post("/v4.0.0/libpod/build?remote=https%3A%2F%2Fexample.com%2Fctx.tar&secrets=%5B%22id%3Ds%2Csrc%3Dsecret-1%22%5D", ""),
	} {
		out := raw(t, sock, req)
		if !strings.HasPrefix(out, "HTTP/1.1 200 ") {
			t.Errorf("%.70q: want 200, got %.200q", req, out)
		}
	}
}

// A copy into or out of a container with a mount is refused (podman copies
// through the bind's source, or the volume's mount point, itself); one
// without goes on, the container named by its id.
func TestAPIFilterArchive(t *testing.T) {
	sock, _, heard := startFilter(t)
	for _, uri := range []string{
		"/v1.41/containers/bound/archive?path=/host",
		"/v4.0.0/libpod/containers/bound/archive?path=/",
		"/v4.0.0/libpod/containers/gone/archive?path=/",
		"/v4.0.0/libpod/containers/vol/archive?path=/",
		"/v4.0.0/libpod/containers/b%6Fund/archive?path=/",
		"/v4.0.0/libpod/containers/x/../bound/archive?path=/",
	} {
		for _, method := range []string{"PUT", "GET", "HEAD"} {
			out := raw(t, sock, method+" "+uri+" HTTP/1.1\r\nHost: d\r\nContent-Length: 0\r\n\r\n")
			if !strings.HasPrefix(out, "HTTP/1.1 403 ") {
				t.Errorf("%s %s: want 403, got %.200q", method, uri, out)
			}
		}
	}
	if got := heard(); len(got) != 18 || got[0].Check != "copy" {
		t.Errorf("heard %d refusals, want 18 of copy: %+v", len(got), got)
	}
	out := raw(t, sock, "PUT /v1.41/containers/plain/archive?path=/v HTTP/1.1\r\nHost: d\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	if !strings.Contains(out, "archive /v1.41/containers/"+strings.Repeat("a", 64)+"/archive") {
		t.Errorf("a copy into a container without mounts: %q", out)
	}
}

// TestAPIFilterBodies: what a create request's body names on the engine's
// side is refused (a volume's mount options, another volume driver, a
// container's log path or conmon pid file, kube play), whatever the case
// of its keys and wherever it sits; plain requests pass, their bodies
// whole.
func TestAPIFilterBodies(t *testing.T) {
	sock, fake, heard := startFilter(t)
	post := func(uri, body string) string {
		return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: d\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", uri, len(body), body)
	}
	refused := []string{
		post("/v4.3.1/libpod/volumes/create", `{"Name":"v","Options":{"type":"fuse","device":"/w/payload#x"}}`),
		post("/v4.3.1/libpod/volumes/create", `{"name":"v","options":{"O":"bind"}}`),
		post("/v1.41/volumes/create", `{"Name":"v","DriverOpts":{"device":"/"}}`),
		post("/volumes/create", `{"Name":"v","Driver":"nfs"}`),
		post("/v4.3.1/libpod/containers/create", `{"image":"img","log_configuration":{"driver":"k8s-file","path":"/proc/sys/kernel/core_pattern"}}`),
		post("/v4.3.1/libpod/containers/create", `{"image":"img","LOG_CONFIGURATION":{"options":{"Path":"/x"}}}`),
		post("/v1.41/containers/create", `{"Image":"img","HostConfig":{"LogConfig":{"Type":"k8s-file","Config":{"path":"/proc/sys/kernel/poweroff_cmd"}}}}`),
		post("/v1.41/containers/create", `{"Image":"img","hostconfig":{"logconfig":{"config":{"PATH":"/x"}}}}`),
		post("/v4.3.1/libpod/containers/create", `{"image":"img","conmon_pid_file":"/stockade-engine/storage/x"}`),
		post("/v4.3.1/libpod/pods/create", `{"name":"p","infra":{"log_configuration":{"path":"/x"}}}`),
		post("/v4.3.1/libpod/play/kube", "kind: Pod\n"),
		post("/v4.3.1/libpod/kube/play", "kind: Pod\n"),
		post("/v1.41/containers/create", `{"Image": not json`),
		// podman merges a key given twice into the first; a map keeps the last.
		post("/v4.3.1/libpod/volumes/create", `{"Name":"fz","Options":{"type":"fuse","device":"/w/prog#x"},"Options":{}}`),
		post("/v1.41/volumes/create", `{"Name":"fz","DriverOpts":{"type":"fuse"},"driveropts":{}}`),
		post("/v4.3.1/libpod/containers/create", `{"image":"img","log_configuration":{"path":"/x"},"log_configuration":{"driver":"k8s-file"}}`),
		post("/v4.3.1/libpod/containers/create", `{"image":"img","labels":{"a":"1","a":"2"}}`),
		// podman joins KEY=VALUE and splits at the first "=".
		post("/v1.41/containers/create", `{"Image":"img","HostConfig":{"LogConfig":{"Type":"k8s-file","Config":{"path=/w/l":""}}}}`),
		post("/v4.3.1/libpod/pods/create", `{"name":"p","infra_conmon_pid_file":"/w/infra.pid"}`),
	}
	for _, req := range refused {
		out := raw(t, sock, req)
		if !strings.HasPrefix(out, "HTTP/1.1 403 ") {
			t.Errorf("%.90q: want 403, got %.200q", req, out)
		}
	}
	if got := fake.requests(); len(got) != 0 {
		t.Errorf("refused requests reached podman: %q", got)
	}
	if got := heard(); len(got) != len(refused) {
		t.Errorf("heard %d refusals, want %d", len(got), len(refused))
	}
	for _, req := range []string{
		post("/v4.3.1/libpod/volumes/create", `{"Name":"v","Driver":"local","Options":{"copy":"","uid":"1000"}}`),
		post("/v1.41/volumes/create", `{"Name":"v","Driver":"","DriverOpts":{}}`),
		post("/v4.3.1/libpod/containers/create", `{"image":"img","log_configuration":{"driver":"k8s-file","path":"","options":{"tag":"x"}}}`),
		post("/v1.41/containers/create", `{"Image":"img","Labels":{"LogConfig":"x"},"HostConfig":{"LogConfig":{"Type":"json-file","Config":{"max-size":"1m"}}}}`),
		"DELETE /v4.3.1/libpod/play/kube HTTP/1.1\r\nHost: d\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
	} {
		out := raw(t, sock, req)
		if !strings.HasPrefix(out, "HTTP/1.1 200 ") {
			t.Errorf("%.90q: want 200, got %.200q", req, out)
		}
	}
}
