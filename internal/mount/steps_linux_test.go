package mount

import (
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSteps checks what the executor is told for the kinds of mounts whose
// steps are not one system call each.
func TestSteps(t *testing.T) {
	plan := Plan{Mounts: []Mount{
		{Kind: Bind, Source: "/usr", Target: "/usr", ReadOnly: true, IsDir: true},
		{Kind: Tmpfs, Target: "/dev", Data: "mode=0755"},
		{Kind: Device, Source: "/dev/null", Target: "/dev/null"},
		{Kind: Proc, Target: "/proc"},
		{Kind: Empty, Target: "/proc/kcore", Data: "optional"},
		{Kind: Bind, Source: "/work", Target: "/work", IsDir: true, Strict: true},
		{Kind: Bind, Source: "/work/.vscode", Target: "/work/.vscode", ReadOnly: true, IsDir: true, Strict: true},
		{Kind: Empty, Target: "/work/.env", Strict: true},
		{Kind: Dir, Target: "/var/tmp", Mode: 0o1777},
	}}
	steps := Steps(plan, "/tmp")
	of := func(i int) []Step {
		var out []Step
		for _, s := range steps {
			if s.Mount == i {
				out = append(out, s)
			}
		}
		return out
	}
	calls := func(ss []Step) []Call {
		var out []Call
		for _, s := range ss {
			out = append(out, s.Call)
		}
		return out
	}
	same := func(what string, got, want []Call) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s: calls %v, want %v", what, got, want)
			return
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s: calls %v, want %v", what, got, want)
				return
			}
		}
	}
	same("read-only system bind", calls(of(0)), []Call{CallMkdir, CallMount, CallSetattr})
	if s := of(0)[2]; s.Flags != unix.AT_RECURSIVE || s.Attr&unix.MOUNT_ATTR_RDONLY == 0 {
		t.Errorf("system bind is not made read-only recursively: %+v", s)
	}
	same("device", calls(of(2)), []Call{CallTouch, CallMount, CallSetattr})
	if s := of(2)[2]; s.Attr&unix.MOUNT_ATTR_RDONLY == 0 || s.Attr&unix.MOUNT_ATTR_NOSUID == 0 {
		t.Errorf("a device bind must be read-only and nosuid (the node is the host's): %+v", s)
	}
	same("proc", calls(of(3)), []Call{CallMkdir, CallMount, CallMount})
	if s := of(3)[1]; s.Skip != 1 || s.Ok == 0 {
		t.Errorf("procfs with hidepid must fall back to plain procfs: %+v", s)
	}
	same("optional mask", calls(of(4)), []Call{CallMount})
	if s := of(4)[0]; s.Ok&(1<<unix.ENOENT) == 0 {
		t.Errorf("a missing optional mask must be skipped: %+v", s)
	}
	// Masks take their flags from the staging root, sealed before them.
	sealedAt, firstMask := -1, -1
	for i, s := range steps {
		if s.Call == CallSetattr && s.Path == "/" && s.Attr == sealed {
			sealedAt = i
		}
		if s.Mount == 4 && firstMask < 0 {
			firstMask = i
		}
	}
	if sealedAt < 0 || sealedAt > firstMask {
		t.Errorf("the staging root is not made read-only, nosuid, nodev and noexec before the masks (steps %d, %d)", sealedAt, firstMask)
	}
	// The workdir is bound without following a link, into the new
	// root's own tmpfs.
	same("workdir", calls(of(5)), []Call{CallMkdir, CallBindAt})
	if s := of(5)[1]; s.Source != "/oldroot/work" || s.Check != 0 || s.Flags != unix.AT_RECURSIVE {
		t.Errorf("workdir bind: %+v", s)
	}
	// A protected path is bound onto itself through the workdir's bind:
	// nothing may be created for it, on the host least of all, and it
	// must still be the path the plan saw.
	same("protected path", calls(of(6)), []Call{CallBindAt})
	if s := of(6)[0]; s.Check != CheckSame || s.Attr&unix.MOUNT_ATTR_RDONLY == 0 {
		t.Errorf("protected path: %+v", s)
	}
	same("mask", calls(of(7)), []Call{CallMaskAt})
	if s := of(7)[0]; s.Ok != 0 || s.Source != emptyFile || s.Attr != 0 {
		t.Errorf("a mask of a file binds the empty file with the staging root's attributes, and must not fail silently: %+v", s)
	}
	same("dir", calls(of(8)), []Call{CallMkdir, CallMkdir, CallChmod})
	if last := steps[len(steps)-1]; last.Call != CallChdir || last.Path != "/" {
		t.Errorf("last step %+v, want chdir /", last)
	}
}

// TestStepsStockadeFiles: the denials file is made in a tmpfs of the
// staging root's own, kept open for writing, and bound read-only into a
// tmpfs of its own in the new root, with nothing of the host; the
// --gitconfig copy, in the sandbox HOME
// (a tree the sandbox writes), is made there and opened with no link on
// the way, and covers a link it finds rather than follow it.
func TestStepsStockadeFiles(t *testing.T) {
	plan, err := BuildScan(Config{
		Workdir: "/work", Home: "/home/u", HomeSource: "/data/home",
		DenialsAt: "/run/stockade/denials", GitConfig: "[user]\n\tname = x\n",
	}, Scan{Trees: Trees{Workdir: "/work", HomeSource: "/data/home"}}, OS{})
	if err != nil {
		t.Fatal(err)
	}
	steps := Steps(plan, "/tmp")
	for i, m := range plan.Mounts {
		var got []Step
		for _, s := range steps {
			if s.Mount == i {
				got = append(got, s)
			}
		}
		last := got[len(got)-1]
		switch m.Target {
		case "/run/stockade":
			if m.Kind != Tmpfs || last.Call != CallMount || last.FSType != "tmpfs" {
				t.Errorf("/run/stockade: %+v, %+v", m, last)
			}
		case "/run/stockade/denials":
			if m.Kind != Feed || m.Source != "" {
				t.Fatalf("the denials file: %+v", m)
			}
			var calls []Call
			for _, s := range got {
				calls = append(calls, s.Call)
			}
			want := []Call{CallMkdir, CallMount, CallKeep, CallLstat, CallTouch, CallMount, CallSetattr}
			if !slices.Equal(calls, want) {
				t.Fatalf("the denials file's steps: %v, want %v", calls, want)
			}
			if s := got[1]; s.FSType != "tmpfs" || s.Path != "/tmp"+feedDir || s.Flags&unix.MS_NOEXEC == 0 {
				t.Errorf("the denials file's tmpfs: %+v", s)
			}
			if s := got[2]; s.Path != "/tmp"+feedFile {
				t.Errorf("the denials file is kept at %q, want it in the staging tmpfs %q", s.Path, "/tmp"+feedFile)
			}
			if bind := got[5]; bind.Source != feedFile || bind.Path != "/newroot/run/stockade/denials" || bind.Flags&unix.MS_REC != 0 {
				t.Errorf("the denials file's bind: %+v", bind)
			}
			if last.Path != "/newroot/run/stockade/denials" || last.Attr&unix.MOUNT_ATTR_RDONLY == 0 || last.Attr&unix.MOUNT_ATTR_NOEXEC == 0 {
				t.Errorf("the denials file's bind is not read-only: %+v", last)
			}
			// Kept before the staging root is entered (its path is
			// under the base) and sealed (a writer on it would stop
			// that: the tmpfs is its own).
			for _, s := range steps {
				if s.Call == CallKeep {
					break
				}
				if s.Call == CallPivot || s.Call == CallSetattr {
					t.Errorf("the denials file is kept after %q", s.What)
				}
			}
		case "/home/u/.gitconfig":
			if m.Kind != File || last.Call != CallMaskAt || last.Source != fileAt(i) || got[len(got)-2].Call != CallTouch || !got[len(got)-2].Strict {
				t.Errorf("the git config: %+v", got)
			}
		}
	}
	if _, ok := find(plan, "/run/stockade"); !ok {
		t.Error("no /run/stockade in the plan")
	}
	if _, ok := find(plan, "/home/u/.gitconfig"); !ok {
		t.Error("no .gitconfig in the plan")
	}
}
