//go:build linux

package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/mount"
)

// TestFeed: the plan's Feed file is made inside the sandbox: before the
// command starts the supervisor holds a write-only descriptor of it, and
// init none once it may start the command; what the
// supervisor writes, the command reads at the target, and cannot write.
func TestFeed(t *testing.T) {
	requireSandbox(t)
	const at = "/run/stockade/denials"
	spec, err := NewSpec(Config{ID: "feed01", Workdir: t.TempDir(), Home: "/nonexistent-home", DenialsAt: at,
		Argv: []string{"sh", "-c", "cat " + at + "; echo forged >>" + at + " 2>/dev/null && echo WROTE; cat " + at + "; read x; true"},
		Env:  []string{"PATH=/usr/bin:/bin"}}, mount.OS{})
	if err != nil {
		t.Fatal(err)
	}
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()
	// The command waits on its stdin until init's descriptors are read:
	// an ended command takes init with it.
	inR, inW, _ := os.Pipe()
	defer inR.Close()
	defer inW.Close()
	outR, outW, _ := os.Pipe()
	var out bytes.Buffer
	done := make(chan struct{})
	go func() { out.ReadFrom(outR); close(done) }()
	var feed *os.File
	var initPID int
	var initFDs []string // init's descriptors once the command runs
	code, err := Run(spec, Options{Stdin: inR, Stdout: outW, Stderr: devnull,
		OnStart: func(pid int) error { initPID = pid; return nil },
		OnFeed:  func(f *os.File) error { feed = f; return nil },
		OnCommand: func() {
			// Init sends the descriptor and closes it before it may
			// start the command: from then on it holds its stdio, the
			// sync socket and its signalfd.
			ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", initPID))
			if err != nil {
				initFDs = []string{err.Error()}
			}
			for _, e := range ents {
				l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", initPID, e.Name()))
				initFDs = append(initFDs, e.Name()+"="+l)
			}
			inW.Close()
		},
		BeforeCommand: func() error {
			if feed == nil {
				return fmt.Errorf("no feed descriptor before the command")
			}
			if fl, err := unix.FcntlInt(feed.Fd(), unix.F_GETFL, 0); err != nil || fl&unix.O_ACCMODE != unix.O_WRONLY {
				return fmt.Errorf("the feed descriptor's flags: %#x, %v; want write-only", fl, err)
			}
			_, err = feed.WriteString("fed\n")
			return err
		},
	})
	outW.Close()
	<-done
	if feed != nil {
		feed.Close()
	}
	if code != 0 || err != nil {
		t.Fatalf("status %d, err %v, output %q", code, err, out.String())
	}
	// Init is not dumpable: only root reads its descriptors (as a user,
	// the battery's root pass checks them).
	switch {
	case os.Geteuid() != 0:
		if len(initFDs) != 1 || !strings.Contains(initFDs[0], "permission denied") {
			t.Errorf("as a user, init's descriptors: %q, want permission denied", initFDs)
		}
	case len(initFDs) != 5 || !strings.HasSuffix(initFDs[4], "[signalfd]"):
		t.Errorf("init holds %q, want stdio, the sync socket and the signalfd", initFDs)
	}
	if out.String() != "fed\nfed\n" {
		t.Errorf("the command read %q, want the supervisor's line twice and no write of its own", out.String())
	}
}
