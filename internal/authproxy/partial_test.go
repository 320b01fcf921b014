package authproxy

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// echoHeaders is a body that holds the request's headers, the real key
// among them: what a debug endpoint or an error that quotes the request
// sends back.
func echoHeaders(r *http.Request) []byte {
	var b bytes.Buffer
	for name, vals := range r.Header {
		fmt.Fprintf(&b, "%s: %s\n", name, strings.Join(vals, ", "))
	}
	return b.Bytes()
}

// TestRangeCannotSplitTheKey: the upstream echoes the key and honours Range
// and If-Range (http.ServeContent). Fetched in pieces shorter than the key,
// no piece would hold the whole key and the scrubber would let every piece
// through. The proxy drops the headers that ask for a part, so each answer
// is the whole echo, masked.
func TestRangeCannotSplitTheKey(t *testing.T) {
	up := startUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		// Without the range headers and sorted, so that every request gets
		// the same bytes at the same offsets.
		rng := r.Header.Get("Range")
		if rng == "" {
			rng = r.Header.Get("Request-Range") // as an old server would
		}
		ifRange := r.Header.Get("If-Range")
		r.Header.Del("Range")
		r.Header.Del("If-Range")
		r.Header.Del("Request-Range")
		lines := strings.Split(strings.TrimSpace(string(echoHeaders(r))), "\n")
		slices.Sort(lines)
		r.Header.Set("Range", rng)
		r.Header.Set("If-Range", ifRange)
		w.Header().Set("Content-Type", "text/plain")
		http.ServeContent(w, r, "", time.Unix(1e9, 0), strings.NewReader(strings.Join(lines, "\n")))
	})
	p := startProxy(t, allRoutes(t, up), nil)
	key := keyOf("openai")
	const piece = 5 // shorter than any key
	for _, tt := range []struct{ name, header, ifRange string }{
		{"Range", "Range", ""},
		{"Range with If-Range", "Range", "Sat, 09 Sep 2001 01:46:40 GMT"},
		{"Request-Range", "Request-Range", ""}, // the pre-RFC 2616 name some servers still honour
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got strings.Builder
			for off := 0; off < 4096; off += piece {
				h := hdr("Authorization", "Bearer sk-proxy", tt.header, fmt.Sprintf("bytes=%d-%d", off, off+piece-1))
				if tt.ifRange != "" {
					h.Set("If-Range", tt.ifRange)
				}
				resp, body := do(t, nil, "GET", p.base+"/openai/v1/echo", h, "")
				if resp.StatusCode == http.StatusRequestedRangeNotSatisfiable {
					break
				}
				if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusPartialContent {
					t.Fatalf("status %d: %q", resp.StatusCode, body)
				}
				if resp.StatusCode == http.StatusOK {
					got.Reset()
					got.WriteString(body)
					break
				}
				got.WriteString(body)
			}
			if strings.Contains(got.String(), key) {
				t.Fatalf("the key came out in pieces: %q", got.String())
			}
			if !strings.Contains(got.String(), strings.Repeat("*", len(key))) {
				t.Errorf("want the whole echo with the key masked, got %q", got.String())
			}
			for _, name := range []string{"Range", "If-Range", "Request-Range"} {
				if v := up.last(t).Header.Get(name); v != "" {
					t.Errorf("the upstream got %s: %s", name, v)
				}
			}
		})
	}
}

// TestUnscrubbableAnswerRefused: an answer the scrubber cannot read as the
// agent will (a part of a representation, or an encoding the transport did
// not undo) is refused with 502, says why, and is an auth_denied event.
func TestUnscrubbableAnswerRefused(t *testing.T) {
	for _, tt := range []struct {
		name   string
		answer func(w http.ResponseWriter, body []byte)
		reason string
	}{
		{"206 without being asked", func(w http.ResponseWriter, body []byte) {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes 0-9/%d", len(body)))
			w.WriteHeader(http.StatusPartialContent)
			w.Write(body[:10])
		}, "partial content"},
		{"200 with Content-Range", func(w http.ResponseWriter, body []byte) {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes 0-9/%d", len(body)))
			w.Write(body[:10])
		}, "partial content"},
		{"multipart/byteranges", func(w http.ResponseWriter, body []byte) {
			w.Header().Set("Content-Type", "multipart/byteranges; boundary=x")
			w.Write(body[:10])
		}, "partial content"},
		{"deflate not asked for", func(w http.ResponseWriter, body []byte) {
			w.Header().Set("Content-Encoding", "deflate")
			fw, _ := flate.NewWriter(w, flate.BestSpeed)
			fw.Write(body)
			fw.Close()
		}, "encoded answer"},
		{"gzip twice", func(w http.ResponseWriter, body []byte) {
			w.Header().Set("Content-Encoding", "gzip, gzip")
			outer := gzip.NewWriter(w)
			inner := gzip.NewWriter(outer)
			inner.Write(body)
			inner.Close()
			outer.Close()
		}, "encoded answer"},
		{"x-gzip", func(w http.ResponseWriter, body []byte) {
			w.Header().Set("Content-Encoding", "x-gzip")
			gz := gzip.NewWriter(w)
			gz.Write(body)
			gz.Close()
		}, "encoded answer"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			up := startUpstream(t, func(w http.ResponseWriter, r *http.Request) { tt.answer(w, echoHeaders(r)) })
			p := startProxy(t, allRoutes(t, up), nil)
			resp, body := do(t, nil, "GET", p.base+"/openai/v1/echo", hdr("Authorization", "Bearer sk-proxy"), "")
			if resp.StatusCode != http.StatusBadGateway || !strings.Contains(resp.Header.Get("X-Stockade-Denied"), tt.reason) {
				t.Fatalf("status %d, X-Stockade-Denied %q, body %q: want 502 and %q",
					resp.StatusCode, resp.Header.Get("X-Stockade-Denied"), body, tt.reason)
			}
			if resp.Header.Get("Content-Range") != "" || resp.Header.Get("Content-Encoding") != "" {
				t.Errorf("the refusal kept the upstream's headers: %v", resp.Header)
			}
			if !strings.HasPrefix(body, "stockade auth proxy: ") || strings.Contains(body, "K3Y") {
				t.Errorf("body %q", body)
			}
			evs := p.audit.waitFor(t, 1)
			if len(evs) != 1 || evs[0].name != EventDenied {
				t.Fatalf("events %v, want one %s", evs, EventDenied)
			}
			f := evs[0].fields
			if f["provider"] != "openai" || f["path"] != "/v1/echo" || !strings.Contains(fmt.Sprint(f["reason"]), tt.reason) {
				t.Errorf("event fields %v", f)
			}
		})
	}
}

// TestBodilessAnswersKeepTheirHeaders: HEAD, 204 and 304 carry no body, so
// an encoding header on them hides nothing and is not a reason to refuse.
func TestBodilessAnswersKeepTheirHeaders(t *testing.T) {
	up := startUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "br")
		switch r.URL.Path {
		case "/v1/nocontent":
			w.WriteHeader(http.StatusNoContent)
		case "/v1/notmodified":
			w.WriteHeader(http.StatusNotModified)
		}
	})
	p := startProxy(t, allRoutes(t, up), nil)
	for _, tt := range []struct {
		method, path string
		status       int
	}{{"HEAD", "/openai/v1/x", 200}, {"GET", "/openai/v1/nocontent", 204}, {"GET", "/openai/v1/notmodified", 304}} {
		resp, _ := do(t, nil, tt.method, p.base+tt.path, hdr("Authorization", "Bearer sk-proxy"), "")
		if resp.StatusCode != tt.status {
			t.Errorf("%s %s: status %d (%s), want %d", tt.method, tt.path, resp.StatusCode, resp.Header.Get("X-Stockade-Denied"), tt.status)
		}
	}
}

// failAfter returns its data, then err.
type failAfter struct {
	data []byte
	err  error
}

func (f *failAfter) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

// TestScrubberKeepsTheTailOnError: a stream cut inside the key (the
// upstream's connection reset, a truncated Content-Length or gzip) must not
// release the held start of the key; only a clean end does.
func TestScrubberKeepsTheTailOnError(t *testing.T) {
	const key = "sk-real-abcdef"
	in := "data: x\n\nsk-real-abc"
	for _, tt := range []struct {
		err  error
		want string
	}{
		{io.EOF, in},
		{io.ErrUnexpectedEOF, "data: x\n\n"},
		{errors.New("connection reset by peer"), "data: x\n\n"},
	} {
		got, err := io.ReadAll(newScrubber(io.NopCloser(&failAfter{[]byte(in), tt.err}), key))
		if string(got) != tt.want || (tt.err != io.EOF) != (err != nil) {
			t.Errorf("ending in %v: got %q, %v; want %q", tt.err, got, err, tt.want)
		}
	}
}

// TestDroppedRequestHeaderTable: every entry is lower case (names are
// compared in lower case) and has a reason.
func TestDroppedRequestHeaderTable(t *testing.T) {
	for _, table := range []map[string]string{droppedRequestHeaders, droppedRequestPrefixes} {
		for name, why := range table {
			if name != strings.ToLower(name) || why == "" {
				t.Errorf("%q: want a lower-case name and a reason, have %q", name, why)
			}
		}
	}
	for _, name := range []string{"Range", "If-Range", "Request-Range", "Accept-Encoding", "X-Api-Key", "Proxy-Authorization", "X-Forwarded-For"} {
		if !droppedRequestHeader(name) {
			t.Errorf("%s reaches the upstream", name)
		}
	}
	for _, name := range []string{"Content-Type", "Anthropic-Version", "If-None-Match"} {
		if droppedRequestHeader(name) {
			t.Errorf("%s is dropped", name)
		}
	}
}
