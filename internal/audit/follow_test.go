package audit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestFollow(t *testing.T) {
	tests := []struct {
		name      string
		fromStart bool
		inotify   bool
		want      []uint64 // seqs seen: 2 before Follow starts, 3 after
	}{
		{"from start, inotify", true, true, []uint64{1, 2, 3, 4, 5}},
		{"from end, inotify", false, true, []uint64{3, 4, 5}},
		{"from start, polling", true, false, []uint64{1, 2, 3, 4, 5}},
		{"from end, polling", false, false, []uint64{3, 4, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.inotify {
				watchFile = func(string) (<-chan struct{}, func()) { return nil, func() {} }
				pollInterval = 10 * time.Millisecond
				t.Cleanup(func() { watchFile, pollInterval = watch, 250*time.Millisecond })
			}
			ready := make(chan struct{})
			followReady = func() { close(ready) }
			t.Cleanup(func() { followReady = nil })

			path := filepath.Join(t.TempDir(), "log.jsonl")
			w, err := Open(path, testSession)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			logN := func(from, to int) {
				for i := from; i <= to; i++ {
					if err := w.Log(SourceSupervisor, EventConnection, map[string]any{"n": i}); err != nil {
						t.Fatal(err)
					}
				}
			}
			logN(1, 2)

			ctx, cancel := context.WithCancel(context.Background())
			seen := make(chan uint64, 10)
			done := make(chan error, 1)
			go func() {
				done <- Follow(ctx, path, tt.fromStart, func(ev Event) error { seen <- ev.Seq; return nil })
			}()
			select {
			case <-ready:
			case err := <-done:
				t.Fatalf("Follow ended before it was ready: %v", err)
			}
			logN(3, 5)

			timeout := time.After(10 * time.Second)
			for _, want := range tt.want {
				select {
				case got := <-seen:
					if got != want {
						t.Fatalf("Follow saw seq %d, want %d", got, want)
					}
				case <-timeout:
					t.Fatalf("Follow did not report seq %d within 10s", want)
				}
			}
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Follow returned %v after cancel, want nil", err)
			}
			if len(seen) > 0 {
				t.Errorf("Follow saw more: seq %d", <-seen)
			}
		})
	}
}

func TestFollowWaitsForAWholeLine(t *testing.T) {
	path, lines := writeLog(t, 2)
	// Leave the second line half-written, as a reader may find it.
	if err := os.WriteFile(path, []byte(lines[0]+"\n"+lines[1][:30]), 0o600); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	followReady = func() { close(ready) }
	t.Cleanup(func() { followReady = nil })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := make(chan uint64, 10)
	done := make(chan error, 1)
	go func() { done <- Follow(ctx, path, true, func(ev Event) error { seen <- ev.Seq; return nil }) }()
	<-ready
	if got := <-seen; got != 1 {
		t.Fatalf("first event has seq %d", got)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, lines[1][30:])
	f.Close()
	select {
	case got := <-seen:
		if got != 2 {
			t.Fatalf("second event has seq %d", got)
		}
	case err := <-done:
		t.Fatalf("Follow ended: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("Follow did not report the completed line within 10s")
	}
}

func TestFollowStopsOnCallbackError(t *testing.T) {
	path, _ := writeLog(t, 3)
	stop := fmt.Errorf("enough")
	n := 0
	err := Follow(context.Background(), path, true, func(Event) error {
		if n++; n == 2 {
			return stop
		}
		return nil
	})
	if err == nil || n != 2 {
		t.Fatalf("Follow returned %v after %d events, want the callback's error after 2", err, n)
	}
}
