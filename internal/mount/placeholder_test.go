package mount

import (
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

func TestPlaceholders(t *testing.T) {
	wd := tree(t, ".git/config", ".claude/settings.json")
	cfg := Config{Workdir: wd, Protect: []string{".git/hooks/", ".vscode/", "CLAUDE.md", ".mcp.json", ".cursor/rules/", ".claude/", ".env.*"}}
	ps, err := createPlaceholders(cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{wd + "/.git/hooks": true, wd + "/.vscode": true, wd + "/CLAUDE.md": false, wd + "/.mcp.json": false}
	if len(ps) != len(want) {
		t.Fatalf("placeholders %+v, want %v", ps, want)
	}
	for _, p := range ps {
		dir, ok := want[p.Path]
		if !ok || dir != p.Dir {
			t.Errorf("unexpected placeholder %+v", p)
		}
	}
	if _, err := os.Stat(wd + "/.cursor"); err == nil {
		t.Error(".cursor was created: placeholders must not create missing parents")
	}
	if b, err := os.ReadFile(wd + "/.mcp.json"); err != nil || string(b) != "{}\n" {
		t.Errorf(".mcp.json placeholder = %q, %v; want valid empty JSON", b, err)
	}
	if fi, err := os.Stat(wd + "/CLAUDE.md"); err != nil || fi.Size() != 0 || fi.Mode().Perm() != 0o644 {
		t.Errorf("CLAUDE.md placeholder: %v %v", fi, err)
	}
	// The plan protects them now.
	plan, _ := Build(cfg, OS{})
	if m, ok := find(plan, wd+"/.vscode"); !ok || !m.ReadOnly {
		t.Errorf("placeholder .vscode not protected: %+v", m)
	}
	if missing := ScanTrees(cfg, OS{}).Missing; len(missing) != 0 {
		t.Errorf("Missing = %+v, want none (.cursor/rules has no parent to hold it)", missing)
	}
	// Content added outside the sandbox (the user, or a sandbox of an
	// enclosing project) is never removed, nor left for a tool to read:
	// it is moved aside, and said.
	os.WriteFile(filepath.Join(wd, ".vscode", "mine.json"), []byte("{}"), 0o644)
	if err := RemovePlaceholders(ps, Stash{}); err == nil || !strings.Contains(err.Error(), "moved to") {
		t.Errorf("RemovePlaceholders said %v although .vscode is no longer empty", err)
	}
	for p := range want {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s exists after removal", p)
		}
	}
	if m, _ := filepath.Glob(wd + "/.vscode.stockade-quarantine-*/mine.json"); len(m) != 1 {
		t.Errorf("mine.json was not kept aside: %v", m)
	}
}

// TestSweep: placeholders of a process that died are removed by the next
// stockade; those of a live one are left alone.
func TestSweep(t *testing.T) {
	wd := tree(t, "src/")
	rs := Records{Dir: t.TempDir()}
	cfg := Config{Workdir: wd, Protect: []string{"CLAUDE.md", ".vscode/"}}
	ps, _, err := rs.Claim("abc123", planned(cfg))
	if err != nil || len(ps) != 2 {
		t.Fatalf("Claim = %v, %v", ps, err)
	}
	if err := rs.Sweep(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ps[0].Path); err != nil {
		t.Fatal("Sweep removed the placeholders of a live process")
	}
	// Pretend the recording process died: rewrite the record with a dead PID.
	r, _ := rs.read("abc123")
	r.PID = 999999999
	rs.write("abc123", r)
	if err := rs.Sweep(); err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if _, err := os.Lstat(p.Path); err == nil {
			t.Errorf("%s survived the sweep", p.Path)
		}
	}
	if ents, _ := filepath.Glob(filepath.Join(rs.Dir, "*.json")); len(ents) != 0 {
		t.Errorf("record survived the sweep: %v", ents)
	}
}

// TestSharedPlaceholders: two sandboxes of one project share a placeholder;
// whichever ends first hands it to the other instead of removing it, in
// either order, and a sandbox whose scan found the other's placeholder as
// an existing path borrows it too (Live).
func TestSharedPlaceholders(t *testing.T) {
	for _, firstEnds := range []bool{true, false} {
		wd := tree(t, "src/")
		rs := Records{Dir: t.TempDir()}
		cfg := Config{Workdir: wd, Protect: []string{"CLAUDE.md"}}
		first, releaseFirst, err := rs.Claim("first1", planned(cfg))
		if err != nil || len(first) != 1 || first[0].Borrowed {
			t.Fatalf("first: %+v %v", first, err)
		}
		// The second sandbox scans now: CLAUDE.md exists. It must know
		// that it is the first one's placeholder, and borrow it.
		if len(planned(cfg)) != 0 {
			t.Fatal("the scan still lists CLAUDE.md as missing")
		}
		live := rs.Live()
		phs, ok := live[first[0].Path]
		if !ok || len(phs) != 1 {
			t.Fatalf("Live = %+v, want the first sandbox's CLAUDE.md", live)
		}
		ph := phs[0]
		second, releaseSecond, err := rs.Claim("second", []Placeholder{{Path: ph.Path, Root: ph.Root, Dir: ph.Dir}})
		if err != nil || len(second) != 1 || !second[0].Borrowed {
			t.Fatalf("second: %+v %v", second, err)
		}
		end, last := releaseFirst, releaseSecond
		if !firstEnds {
			end, last = releaseSecond, releaseFirst
		}
		if err := end(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(first[0].Path); err != nil {
			t.Fatal("a placeholder another sandbox still uses was removed")
		}
		if err := last(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(first[0].Path); err == nil {
			t.Error("the placeholder survived both sandboxes")
		}
	}
}

// TestPlanBeforePlaceholders: a plan made before the placeholders exist
// (Scan.Hold) is the plan made after they do, globs included, and a
// placeholder that already exists is taken as it is.
func TestPlanBeforePlaceholders(t *testing.T) {
	wd := tree(t, ".git/config", ".claude/settings.json", ".env.local")
	cfg := Config{Workdir: wd, Protect: []string{".git/hooks/", ".vscode/", "CLAUDE.md", ".mcp.json", ".claude/", ".c*"}, Mask: []string{".env.*", "CLAUDE*"}}
	want := planned(cfg)
	if len(want) != 4 {
		t.Fatalf("planned = %+v, want .git/hooks, .vscode, CLAUDE.md and .mcp.json", want)
	}
	before, err := BuildScan(cfg, ScanTrees(cfg, OS{}).Hold(), OS{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(wd, ".vscode")); err == nil {
		t.Fatal("planning created a placeholder")
	}
	made, err := Create(want, Stash{})
	if err != nil {
		t.Fatal(err)
	}
	defer RemovePlaceholders(made, Stash{})
	after, err := Build(cfg, OS{})
	if err != nil {
		t.Fatal(err)
	}
	// The same targets, in the same order; a placeholder is shown from
	// the staging root (empty, read-only) rather than bound from the host.
	targets := func(p Plan) []string {
		var out []string
		for _, m := range p.Mounts {
			out = append(out, m.Target)
		}
		return out
	}
	if !reflect.DeepEqual(targets(before), targets(after)) {
		t.Errorf("plan before the placeholders:\n%+v\nafter:\n%+v", before.Mounts, after.Mounts)
	}
	for _, name := range []string{".vscode", ".mcp.json", ".git/hooks"} {
		if m, ok := find(before, wd+"/"+name); !ok || m.Kind != Empty || m.Why != "placeholder of protected path" {
			t.Errorf("%s before its placeholder exists: %+v, want the staging root's empty one", name, m)
		}
	}
	if _, ok := find(after, wd+"/.vscode"); !ok {
		t.Error(".vscode is not in the plan")
	}
}

// TestStash: placeholders go to the stash at the end and come back from it
// at the next start, the same inodes; one given content never goes there,
// and one that exists already is shared, not replaced.
func TestStash(t *testing.T) {
	wd := tree(t, ".git/config")
	stash := Stash{Dir: filepath.Join(t.TempDir(), "stash")}
	cfg := Config{Workdir: wd, Protect: []string{".vscode/", "CLAUDE.md", ".mcp.json"}}
	first, err := Create(planned(cfg), stash)
	if err != nil || len(first) != 3 {
		t.Fatalf("Create = %+v, %v", first, err)
	}
	if err := RemovePlaceholders(first, stash); err != nil {
		t.Fatal(err)
	}
	for _, ph := range first {
		if _, err := os.Lstat(ph.Path); err == nil {
			t.Errorf("%s is still there", ph.Path)
		}
	}
	// One directory per tree in the stash, small: the moves of a run
	// change no large directory.
	if ents, err := os.ReadDir(stash.Dir); err != nil || len(ents) != 1 || !ents[0].IsDir() {
		t.Errorf("stash holds %v (%v), want one directory for the workdir", ents, err)
	} else if in, _ := os.ReadDir(filepath.Join(stash.Dir, ents[0].Name())); len(in) != 3 {
		t.Errorf("the workdir's stash holds %d entries, want 3", len(in))
	}
	second, err := Create(planned(cfg), stash)
	if err != nil || len(second) != 3 {
		t.Fatalf("Create again = %+v, %v", second, err)
	}
	for i := range second {
		if second[i].Ino != first[i].Ino {
			t.Errorf("%s: inode %d, want %d from the stash", second[i].Path, second[i].Ino, first[i].Ino)
		}
	}
	if b, err := os.ReadFile(filepath.Join(wd, ".mcp.json")); err != nil || string(b) != placeholderJSON {
		t.Errorf(".mcp.json from the stash = %q, %v", b, err)
	}
	// Something writes into CLAUDE.md outside: it is kept aside, and out
	// of the stash.
	os.WriteFile(filepath.Join(wd, "CLAUDE.md"), []byte("x"), 0o644)
	if err := RemovePlaceholders(second, stash); err == nil || !strings.Contains(err.Error(), "CLAUDE.md changed outside") {
		t.Fatalf("removing a placeholder given content: %v", err)
	}
	if m, _ := filepath.Glob(wd + "/CLAUDE.md.stockade-quarantine-*"); len(m) != 1 {
		t.Errorf("CLAUDE.md with content was not kept aside: %v", m)
	} else if b, _ := os.ReadFile(m[0]); string(b) != "x" {
		t.Errorf("CLAUDE.md kept aside = %q, want x", b)
	}
	// A .vscode made meanwhile by someone else is shared, not replaced.
	os.Mkdir(filepath.Join(wd, ".vscode"), 0o755)
	os.WriteFile(filepath.Join(wd, ".vscode", "settings.json"), []byte("{}"), 0o644)
	third, err := Create(planned(Config{Workdir: wd, Protect: []string{".mcp.json"}}), stash)
	if err != nil || len(third) != 1 || third[0].Borrowed {
		t.Fatalf("Create .mcp.json = %+v, %v", third, err)
	}
	if _, err := os.Stat(filepath.Join(wd, ".vscode", "settings.json")); err != nil {
		t.Errorf("the user's .vscode was touched: %v", err)
	}
}

// planned is what gets a placeholder for cfg.
func planned(cfg Config) []Placeholder {
	return Split(ScanTrees(cfg, OS{}).Missing)
}

// createPlaceholders makes the placeholders of cfg, with no stash.
func createPlaceholders(cfg Config) ([]Placeholder, error) {
	return Create(planned(cfg), Stash{})
}

// TestRecordSpare: the files of a released record are kept as spares and
// the next records are written into them, so that a run, which writes its
// record twice (what it plans, then what it made), makes and frees no
// inode in the records directory (see Stash) and truncates none; a spare
// is never read as a record.
func TestRecordSpare(t *testing.T) {
	wd := tree(t, "src/")
	rs := Records{Dir: t.TempDir()}
	inodes := func() map[uint64]bool {
		t.Helper()
		ents, err := os.ReadDir(rs.Dir)
		if err != nil {
			t.Fatal(err)
		}
		out := map[uint64]bool{}
		for _, e := range ents {
			if e.Type().IsRegular() && e.Name() != ".lock" {
				fi, err := e.Info()
				if err != nil {
					t.Fatal(err)
				}
				out[fi.Sys().(*syscall.Stat_t).Ino] = true
			}
		}
		return out
	}
	// The first records are the longer: the next are written over them.
	two := Config{Workdir: wd, Protect: []string{"CLAUDE.md", ".vscode/"}}
	_, release, err := rs.Claim("first1", planned(two))
	if err != nil {
		t.Fatal(err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	first := inodes()
	if len(first) != len(spares) {
		t.Fatalf("%d files kept after the first run, want %d spares", len(first), len(spares))
	}
	if live := rs.Live(); len(live) != 0 {
		t.Errorf("Live = %v after release: a spare was read as a record", live)
	}
	if err := rs.Sweep(); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Workdir: wd, Protect: []string{"CLAUDE.md"}}
	for run := range 3 {
		ps, release, err := rs.Claim("second", planned(cfg))
		if err != nil || len(ps) != 1 {
			t.Fatalf("Claim = %v, %v", ps, err)
		}
		if got := inodes(); !maps.Equal(got, first) {
			t.Errorf("run %d: records directory holds inodes %v, want the spares' %v", run, got, first)
		}
		if r, err := rs.read("second"); err != nil || len(r.Placeholders) != 1 || r.PID != os.Getpid() || r.Pending {
			t.Errorf("second record = %+v, %v", r, err)
		}
		if err := release(); err != nil {
			t.Fatal(err)
		}
		if got := inodes(); !maps.Equal(got, first) {
			t.Errorf("run %d: after release, inodes %v, want the spares' %v", run, got, first)
		}
	}
}
