package job

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/internal/audit"
	"github.com/stockade-dev/stockade/internal/egress"
)

// TestDenialFloodBounded runs four loops of denied CONNECTs against a
// session's egress proxy, its events going to an audit log as the
// supervisor wires them, and checks that the log grows by a few lines a
// second, not one line and two fsyncs per denial. STOCKADE_FLOOD_SECONDS
// sets the duration (1 by default); the numbers are in the test log.
func TestDenialFloodBounded(t *testing.T) {
	secs := 1
	if s, err := strconv.Atoi(os.Getenv("STOCKADE_FLOOD_SECONDS")); err == nil && s > 0 {
		secs = s
	}
	path := filepath.Join(t.TempDir(), "flood.jsonl")
	w, err := audit.Open(path, "flood")
	if err != nil {
		t.Fatal(err)
	}
	px := egress.New(egress.Config{Session: "flood", Audit: func(ev string, f map[string]any) { w.Log(audit.SourceEgress, ev, f) }})
	defer px.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go px.ServeHTTPProxy(l)

	var denials atomic.Int64
	end := time.Now().Add(time.Duration(secs) * time.Second)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				c, err := net.DialTimeout("tcp", l.Addr().String(), time.Second)
				if err != nil {
					continue
				}
				c.SetDeadline(time.Now().Add(2 * time.Second))
				fmt.Fprintf(c, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
				if status, _ := bufio.NewReader(c).ReadString('\n'); len(status) > 12 && status[9:12] == "403" {
					denials.Add(1)
				}
				c.Close()
			}
		}()
	}
	wg.Wait()
	st := w.Stats()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Count(b, []byte("\n"))
	t.Logf("%d denials in %ds: %d lines (%.1f/s), %d bytes (%.0f B/s), %d fsync rounds of log and head (%.1f/s)",
		denials.Load(), secs, lines, float64(lines)/float64(secs), len(b), float64(len(b))/float64(secs), st.Syncs, float64(st.Syncs)/float64(secs))
	if denials.Load() < 100 {
		t.Fatalf("only %d denials: the flood did not flood", denials.Load())
	}
	// The burst, one a second after it, a summary per five seconds and at
	// the close.
	if max := 20 + 2*secs + secs/5 + 2; lines > max {
		t.Errorf("%d lines for %d denials in %ds, want at most %d", lines, denials.Load(), secs, max)
	}
	if max := int64(lines + 2*secs + 2); st.Syncs > max {
		t.Errorf("%d fsync rounds for %d lines, want at most %d", st.Syncs, lines, max)
	}
}
