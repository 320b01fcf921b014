package audit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// events reads back the event names of the log at path.
func events(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	for e, err := range ReadEvents(f) {
		if err != nil {
			t.Fatalf("reading %s: %v", path, err)
		}
		out = append(out, e.Event)
	}
	return out
}

func count(names []string, name string) int {
	n := 0
	for _, e := range names {
		if e == name {
			n++
		}
	}
	return n
}

// wantVerifies checks the log and its head, and returns the report.
func wantVerifies(t *testing.T, path string) Report {
	t.Helper()
	rep, err := VerifyFile(path)
	if err != nil || !rep.OK() {
		t.Fatalf("the log does not verify: %v %v", err, rep.Problems)
	}
	return rep
}

func TestCutOffLineRecoveredOnOpen(t *testing.T) {
	path, _ := writeLog(t, 3)
	// A writer that died in the middle of its fourth line.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"v":1,"seq":4,"time":"2026-11-22T10:00:04Z","sess`)
	f.Close()

	w, err := Open(path, testSession)
	if err != nil {
		t.Fatalf("Open refuses a log whose last line was cut off: %v", err)
	}
	if err := w.Log(SourceSupervisor, EventStop, map[string]any{"reason": "exited"}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	rep := wantVerifies(t, path)
	if got := events(t, path); strings.Join(got, " ") != "step step step gap stop" {
		t.Errorf("events %q, want the three steps, the gap in place of the cut line, stop", got)
	}
	if len(rep.Gaps) != 1 || !strings.Contains(rep.Gaps[0], "line 4 (seq 4): a cut-off line of 50 bytes") {
		t.Errorf("Verify reports gaps %q, want the one at line 4", rep.Gaps)
	}
}

func TestCutOffLineOnDamagedLogRefused(t *testing.T) {
	path, _ := writeLog(t, 3)
	rewrite(t, path, func(s string) string { return strings.Replace(s, `"n":2`, `"n":3`, 1) + `{"v":1,"seq"` })
	before, _ := os.ReadFile(path)
	if w, err := Open(path, testSession); err == nil {
		w.Close()
		t.Fatal("Open repaired the tail of a log that does not verify")
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("a refused Open changed the log")
	}
}

func TestCapEndsTheLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), testSession+".jsonl")
	const capBytes, reserve = 8 << 10, 16 << 10
	w, err := OpenLimited(path, testSession, Limits{MaxBytes: capBytes, Reserve: reserve})
	if err != nil {
		t.Fatal(err)
	}
	var ended error
	for i := 0; i < 1000 && ended == nil; i++ {
		ended = w.Log(SourceEgress, EventAuthRequest, map[string]any{"provider": "p", "path": fmt.Sprintf("/v1/%d", i)})
		select {
		case <-w.Ended():
			if ended == nil {
				ended = errors.New("ended")
			}
		default:
		}
	}
	if ended == nil {
		t.Fatalf("1000 events of ~200 bytes did not end a log capped at %d bytes", capBytes)
	}
	if r := w.EndReason(); !strings.Contains(r, "log cap reached") {
		t.Errorf("EndReason %q, want log cap reached", r)
	}
	// After the end: the reserve takes a few events, then refuses them.
	var refused int
	for range 1000 {
		if err := w.Log(SourceEgress, EventAuthRequest, map[string]any{"provider": "p"}); errors.Is(err, ErrEnded) {
			refused++
		}
	}
	if refused == 0 {
		t.Error("the log took 1000 more events after its end")
	}
	if err := w.Log(SourceSupervisor, EventStop, map[string]any{"reason": "stopped"}); err != nil {
		t.Errorf("the stop event after the end: %v", err)
	}
	w.Close()
	wantVerifies(t, path)
	rep, err := VerifyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Ended) != 2 || !strings.Contains(rep.Ended[0], "audit log ended: log cap reached") ||
		!strings.Contains(rep.Ended[1], "events not logged after the audit log ended") {
		t.Errorf("Verify reports the end as %q, want the log_end and the dropped count", rep.Ended)
	}
	st, _ := os.Stat(path)
	if st.Size() > capBytes+reserve {
		t.Errorf("the log has %d bytes, more than its cap and reserve (%d)", st.Size(), capBytes+reserve)
	}
	got := events(t, path)
	if count(got, EventLogEnd) != 1 || got[len(got)-2] != EventStop || got[len(got)-1] != EventDropped {
		t.Errorf("events end in %q, want one log_end, then stop and dropped last", got[max(0, len(got)-4):])
	}
}

func TestDenialsThrottled(t *testing.T) {
	path := filepath.Join(t.TempDir(), testSession+".jsonl")
	w, err := Open(path, testSession)
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	w.now = func() time.Time { return clock }
	// 1000 denials in 10 seconds, then a quiet minute.
	for i := range 1000 {
		clock = clock.Add(10 * time.Millisecond)
		w.Log(SourceEgress, EventNetworkDenied, map[string]any{"host": "169.254.169.254", "port": 80 + i%3, "reason": "link-local"})
		w.Log(SourceEgress, EventConnection, map[string]any{"host": "x.example", "port": 443, "error": "no such host"})
	}
	w.Log(SourceEgress, EventConnection, map[string]any{"host": "api.example", "port": 443, "bytes_in": 10})
	clock = clock.Add(time.Minute)
	w.Close()
	wantVerifies(t, path)
	got := events(t, path)
	if n := count(got, EventNetworkDenied); n > throttleBurst+11 {
		t.Errorf("%d network_denied lines for 1000 denials in 10s, want at most the burst and one a second (%d)", n, throttleBurst+11)
	}
	if n := count(got, EventConnection); n > throttleBurst+12 || got[len(got)-1] != EventSuppressed && got[len(got)-2] != EventSuppressed {
		t.Errorf("%d connection lines; events end in %q", n, got[len(got)-3:])
	}
	// Every denial is accounted for: logged, or counted in a summary.
	f, _ := os.Open(path)
	defer f.Close()
	seen := 0
	for e := range ReadEvents(f) {
		switch {
		case e.Event == EventNetworkDenied:
			seen++
		case e.Event == EventSuppressed && e.Fields["of"] == EventNetworkDenied:
			var n int
			fmt.Sscan(fmt.Sprint(e.Fields["count"]), &n)
			seen += n
		}
	}
	if seen != 1000 {
		b, _ := os.ReadFile(path)
		t.Log(string(b))
		t.Errorf("logged and counted denials: %d, want 1000", seen)
	}
}

// TestFailedSignsThrottled: a sign request for a key the user's agent does
// not hold costs the sandbox nothing, so a loop of them must not write a
// line and an fsync each (nor fill the log to its cap, which ends the
// session); a signature made is still written every time.
func TestFailedSignsThrottled(t *testing.T) {
	path := filepath.Join(t.TempDir(), testSession+".jsonl")
	w, err := Open(path, testSession)
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	w.now = func() time.Time { return clock }
	for range 1000 {
		clock = clock.Add(10 * time.Millisecond)
		w.Log(SourceSSHAgent, EventSSHSign, map[string]any{"fingerprint": "SHA256:x", "kind": "other", "error": "the user's agent refused"})
	}
	for range 50 {
		w.Log(SourceSSHAgent, EventSSHSign, map[string]any{"fingerprint": "SHA256:y", "kind": "ssh-userauth", "user": "git"})
	}
	clock = clock.Add(time.Minute)
	w.Close()
	wantVerifies(t, path)
	f, _ := os.Open(path)
	defer f.Close()
	failed, made, counted := 0, 0, 0
	for e := range ReadEvents(f) {
		switch {
		case e.Event == EventSSHSign && e.Fields["error"] != nil:
			failed++
		case e.Event == EventSSHSign:
			made++
		case e.Event == EventSuppressed && e.Fields["of"] == EventSSHSign:
			var n int
			fmt.Sscan(fmt.Sprint(e.Fields["count"]), &n)
			counted += n
		}
	}
	if failed > throttleBurst+11 || failed+counted != 1000 {
		t.Errorf("1000 failed signatures in 10s: %d lines and %d counted, want at most %d lines and every one accounted for", failed, counted, throttleBurst+11)
	}
	if made != 50 {
		t.Errorf("%d of 50 signatures made were written", made)
	}
}

func TestGroupCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), testSession+".jsonl")
	w, err := Open(path, testSession)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	hold, held := make(chan struct{}), make(chan struct{})
	var once sync.Once
	w.sync.hook = func() { once.Do(func() { close(held); <-hold }) }
	base := w.Stats().Syncs
	const n = 20
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); w.Log(SourceSupervisor, EventWarning, map[string]any{"message": "first"}) }()
	<-held // the first event's round is under way, and held
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.Log(SourceSupervisor, EventWarning, map[string]any{"message": fmt.Sprint(i)})
		}()
	}
	for deadline := time.Now().Add(10 * time.Second); w.Head().Seq < n+1; {
		if time.Now().After(deadline) {
			t.Fatal("the events were not written while a round was under way")
		}
		time.Sleep(time.Millisecond) // polling for the writes; nothing signals them
	}
	close(hold)
	wg.Wait()
	if got := w.Stats().Syncs - base; got != 2 {
		t.Errorf("%d security events took %d fsync rounds, want 2 (the held one, then one for all the rest)", n+1, got)
	}
}

// TestNoSync: with NoSync, a security event is written at once and its
// fsync left to the flusher (held here: no round may complete), and Close
// does not sync; what was logged is all in the file and verifies.
func TestNoSync(t *testing.T) {
	path := filepath.Join(t.TempDir(), testSession+".jsonl")
	w, err := OpenLimited(path, testSession, Limits{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	rounds := make(chan struct{}, 100)
	w.sync.hook = func() { rounds <- struct{}{} }
	for _, ev := range []string{EventStart, EventTamper, EventStop} {
		if err := w.Log(SourceSupervisor, ev, map[string]any{"path": "/x"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(rounds); n > 1 { // the flusher's tick may have come
		t.Errorf("NoSync: %d fsync rounds for 3 security events and Close, want at most the flusher's 1", n)
	}
	rep, err := VerifyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Lines != 3 {
		t.Errorf("after Close: %d lines, problems %v; want 3, none", rep.Lines, rep.Problems)
	}
}
