package sandbox

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/internal/mount"
)

// filePlacer stands for a cgroup's tasks files (Options.Placer).
type filePlacer struct {
	files []*os.File
	given []bool
}

func (p *filePlacer) TaskFiles() []int {
	var fds []int
	for _, f := range p.files {
		fds = append(fds, int(f.Fd()))
	}
	return fds
}

func (p *filePlacer) InitPlaced(given bool) { p.given = append(p.given, given) }

func placerSpec(t *testing.T) Spec {
	t.Helper()
	spec, err := NewSpec(Config{ID: "place1", Workdir: t.TempDir(), Home: "/nonexistent-home", Argv: []string{"/bin/true"}}, mount.OS{})
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// TestInitPlacesItself: init writes "0" to each tasks file it is given,
// once, before the command runs; a write that fails stops the start with
// an error that says so, and nothing runs.
func TestInitPlacesItself(t *testing.T) {
	requireSandbox(t)
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()

	var readers []*os.File
	p := &filePlacer{}
	for range 2 {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		readers, p.files = append(readers, r), append(p.files, w)
	}
	code, err := Run(placerSpec(t), Options{Stdin: devnull, Stdout: devnull, Stderr: devnull, Placer: p})
	if code != 0 || err != nil {
		t.Fatalf("run with a placer: status %d, %v", code, err)
	}
	for _, w := range p.files {
		w.Close()
	}
	for i, r := range readers {
		b := make([]byte, 8)
		n, _ := r.Read(b)
		if string(b[:n]) != "0" {
			t.Errorf("tasks file %d got %q from init, want \"0\"", i, b[:n])
		}
	}
	if len(p.given) != 1 || !p.given[0] {
		t.Errorf("InitPlaced heard %v, want [true]", p.given)
	}

	// A tasks file init cannot write: the start fails and says why.
	ro, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	spec := placerSpec(t)
	spec.Exec.Argv = []string{"/bin/sh", "-c", "echo ran"}
	p = &filePlacer{files: []*os.File{ro}}
	code, err = Run(spec, Options{Stdin: devnull, Stdout: out, Stderr: out, Placer: p})
	var se *StepError
	if code != ExitSetup || !errors.As(err, &se) || se.Step != "init" || !strings.Contains(se.Msg, "cgroup") || se.Errno != "EBADF" {
		t.Fatalf("a tasks file init cannot write: status %d, error %#v; want %d and an init StepError about the cgroup with EBADF", code, err, ExitSetup)
	}
	if b, _ := os.ReadFile(out.Name()); len(b) != 0 {
		t.Errorf("the command ran: %q", b)
	}
	t.Logf("reported: %v", err)
}
