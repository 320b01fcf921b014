package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzVerify feeds arbitrary bytes to the parser, the verifier and the
// renderer: a damaged or hostile log must be reported, never panic.
func FuzzVerify(f *testing.F) {
	path := filepath.Join(f.TempDir(), "seed.jsonl")
	w, err := Open(path, testSession)
	if err != nil {
		f.Fatal(err)
	}
	w.Log(SourceSupervisor, EventStart, map[string]any{"agent": "claude", "loosened": []string{"allow_hooks"}, "policy": map[string]any{"pids": 4096}})
	w.Log(SourceEgress, EventConnection, map[string]any{"host": "example.com", "port": 443})
	w.Log(SourceSupervisor, EventStop, map[string]any{"reason": "exited", "status": 0})
	head := w.Head()
	w.Close()
	seed, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add(seed[:len(seed)/2])
	f.Add([]byte("{}\n"))
	f.Add([]byte(`{"v":1,"seq":1,"time":"x","session":"a","source":"s","event":"e","prev":"","hash":""}` + "\n"))
	f.Add([]byte("\n\n\xff\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := Verify(bytes.NewReader(data), &head)
		if err != nil {
			t.Fatal(err) // a bytes.Reader does not fail
		}
		// Any change to a line changes its hash, and the head pins the
		// end: the seed is the only input that can verify.
		if rep.OK() != bytes.Equal(data, seed) {
			t.Fatalf("Verify OK = %v for %q: %v", rep.OK(), data, rep.Problems)
		}
		for ev, err := range ReadEvents(bytes.NewReader(data)) {
			if err == nil {
				Render(ev)
			}
		}
	})
}
