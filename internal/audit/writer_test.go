package audit

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestConcurrentWritersMakeOneChain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	w, err := Open(path, testSession)
	if err != nil {
		t.Fatal(err)
	}
	const goroutines, each = 32, 50
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				event := EventConnection // not fsync'd: keeps the test fast
				if i%10 == 0 {
					event = EventSignal
				}
				if err := w.Log(SourceSupervisor, event, map[string]any{"g": g, "i": i}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := VerifyFile(path)
	if err != nil || !rep.OK() {
		t.Fatalf("VerifyFile: %v, %v", err, rep.Problems)
	}
	f, _ := os.Open(path)
	defer f.Close()
	var want uint64 = 1
	for ev, err := range ReadEvents(f) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Seq != want {
			t.Fatalf("seq %d where %d was due", ev.Seq, want)
		}
		want++
	}
	if want-1 != goroutines*each || rep.LastSeq != goroutines*each {
		t.Errorf("read %d events, report has last seq %d; want %d", want-1, rep.LastSeq, goroutines*each)
	}
}

func TestSecondWriterIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	w, err := Open(path, testSession)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	_, err = Open(path, testSession)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), path) {
		t.Fatalf("second Open: %v; want ErrLocked naming %s", err, path)
	}
	t.Log(err)
	// Readers need no lock.
	if _, err := VerifyFile(path); err != nil {
		t.Error(err)
	}
}

func TestReopenContinuesChain(t *testing.T) {
	path, _ := writeLog(t, 5)
	w, err := Open(path, testSession)
	if err != nil {
		t.Fatal(err)
	}
	if h := w.Head(); h.Seq != 5 {
		t.Errorf("reopened head at seq %d, want 5", h.Seq)
	}
	for range 3 {
		if err := w.Log(SourceSupervisor, EventRestart, map[string]any{"attempt": 1}); err != nil {
			t.Fatal(err)
		}
	}
	last := w.Head()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := VerifyFile(path)
	if err != nil || !rep.OK() || rep.LastSeq != 8 || rep.Lines != 8 || rep.LastHash != last.Hash {
		t.Fatalf("after reopen: %+v, %v", rep, err)
	}
	h, err := ReadHead(HeadPath(path))
	if err != nil || *h != last {
		t.Errorf("head file %+v (%v), want %+v", h, err, last)
	}
}

func TestReopenRefuses(t *testing.T) {
	tests := []struct {
		name    string
		session string
		damage  func(t *testing.T, path string)
		want    string // in the error
	}{
		{name: "edited line", session: testSession, damage: func(t *testing.T, path string) {
			rewrite(t, path, func(s string) string { return strings.Replace(s, `"n":2`, `"n":3`, 1) })
		}, want: "refusing to append: audit log does not verify: line 2 (seq 2): hash does not match its content"},
		{name: "cut tail", session: testSession, damage: func(t *testing.T, path string) {
			rewrite(t, path, func(s string) string { return s[:strings.Index(s, "\n")+1] })
		}, want: "the tail was cut off"},
		{name: "removed head", session: testSession, damage: func(t *testing.T, path string) {
			os.Remove(HeadPath(path))
		}, want: ".head is missing"},
		{name: "edited head", session: testSession, damage: func(t *testing.T, path string) {
			os.WriteFile(HeadPath(path), []byte("{}"), 0o600)
		}, want: "not a version 1 head"},
		{name: "other session", session: "ffffff", want: "it is the log of session a1b2c3, not ffffff"},
		{name: "bad session ID", session: "../x", want: "is not of the form"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, _ := writeLog(t, 3)
			if tt.damage != nil {
				tt.damage(t, path)
			}
			w, err := Open(path, tt.session)
			if err == nil {
				w.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Open: %v\nwant it to contain %q", err, tt.want)
			}
			// The refusal must not have released someone else's lock or
			// left the log locked.
			if _, err := Open(path, tt.session); errors.Is(err, ErrLocked) {
				t.Errorf("log stays locked after a refused Open")
			}
		})
	}
}

func rewrite(t *testing.T, path string, edit func(string) string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(edit(string(b))), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestLogRejects(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	w, err := Open(path, testSession)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name          string
		source, event string
		fields        map[string]any
		want          string
	}{
		{"reserved key", SourceSupervisor, EventStop, map[string]any{"hash": "x"}, `field "hash" is reserved`},
		{"reserved key in another case", SourceSupervisor, EventStop, map[string]any{"Prev": "x"}, `field "Prev" is reserved`},
		{"key with a space", SourceSupervisor, EventStop, map[string]any{"a b": 1}, "is not a name"},
		{"empty key", SourceSupervisor, EventStop, map[string]any{"": 1}, "is not a name"},
		{"function value", SourceSupervisor, EventStop, map[string]any{"f": func() {}}, `encoding field "f"`},
		{"NaN", SourceSupervisor, EventStop, map[string]any{"x": math.NaN()}, `encoding field "x"`},
		{"channel", SourceSupervisor, EventStop, map[string]any{"c": make(chan int)}, `encoding field "c"`},
		{"huge value", SourceSupervisor, EventStop, map[string]any{"x": strings.Repeat("a", MaxLineSize)}, "more than a line may hold"},
		{"empty event", SourceSupervisor, "", nil, "must be of the form"},
		{"event with a quote", SourceSupervisor, `stop"`, nil, "must be of the form"},
		{"empty source", "", EventStop, nil, "must be of the form"},
		{"huge event name", SourceSupervisor, strings.Repeat("a", 65), nil, "must be of the form"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := w.Log(tt.source, tt.event, tt.fields)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Log: %v; want an error containing %q", err, tt.want)
			}
		})
	}
	// Nothing was written, and the writer still works.
	if err := w.Log(SourceSupervisor, EventStop, map[string]any{"reason": "exited"}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := w.Log(SourceSupervisor, EventStop, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Log after Close: %v, want ErrClosed", err)
	}
	rep, err := VerifyFile(path)
	if err != nil || !rep.OK() || rep.Lines != 1 {
		t.Errorf("log after rejections: %+v, %v", rep, err)
	}
}

func TestFilesArePrivate(t *testing.T) {
	path, _ := writeLog(t, 1)
	for _, p := range []string{path, HeadPath(path)} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", p, fi.Mode().Perm())
		}
	}
}

func TestOpenRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	os.WriteFile(target, nil, 0o600)
	path := filepath.Join(dir, "log.jsonl")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	if w, err := Open(path, testSession); err == nil {
		w.Close()
		t.Fatal("Open followed a symlink")
	}
}

func TestTerminalControlsAreEscapedInTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	w, err := Open(path, testSession)
	if err != nil {
		t.Fatal(err)
	}
	evil := "a\x1b]0;pwned\x07b\u009b31mc\u202ed\x7f"
	if err := w.Log(SourceEgress, EventNetworkDenied, map[string]any{"host": evil}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	b, _ := os.ReadFile(path)
	if strings.ContainsFunc(strings.TrimSuffix(string(b), "\n"), unsafeRune) {
		t.Errorf("log holds terminal controls: %q", b)
	}
	f, _ := os.Open(path)
	defer f.Close()
	for ev, err := range ReadEvents(f) {
		if err != nil || ev.Fields["host"] != evil {
			t.Errorf("read back %q (%v), want %q", ev.Fields["host"], err, evil)
		}
	}
	rep, _ := VerifyFile(path)
	if !rep.OK() {
		t.Error(rep.Problems)
	}
}
