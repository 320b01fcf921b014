package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/internal/policy"
)

// TestPrivateExposure: stockade's state, data and configuration
// directories are masked where a tree the sandbox sees holds them, made
// first through no link, and a tree inside one is refused; a Slurm job's
// read-only job directory is the one tree allowed inside.
func TestPrivateExposure(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(base, "home")
	proj := filepath.Join(base, "proj")
	for _, d := range []string{home, proj, filepath.Join(base, "config")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	state, data, config := filepath.Join(proj, "state"), filepath.Join(base, "data"), filepath.Join(base, "config")
	t.Setenv("XDG_STATE_HOME", state)
	t.Setenv("XDG_DATA_HOME", data)
	t.Setenv("XDG_CONFIG_HOME", config)
	jobs := filepath.Join(state, "stockade", "slurm", "jobs", "s1-1")
	if err := os.MkdirAll(jobs, 0o700); err != nil {
		t.Fatal(err)
	}

	// The workdir holds the state directory; a --rw tree holds the
	// configuration directory, not made yet.
	got, err := privateExposure(home, policy.Policy{Workdir: proj, RW: []string{config}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].dir != filepath.Join(state, "stockade") || got[0].shownBy != proj ||
		got[1].dir != filepath.Join(config, "stockade") || got[1].shownBy != config {
		t.Fatalf("privateExposure = %+v, want the state directory shown by the workdir and the configuration's by --rw", got)
	}
	for _, d := range got {
		if err := d.make(); err != nil {
			t.Fatalf("make %s: %v", d.dir, err)
		}
		if fi, err := os.Lstat(d.dir); err != nil || !fi.IsDir() {
			t.Errorf("%s after make: %v %v", d.dir, fi, err)
		}
	}

	// A link an earlier session planted where the directory goes: nothing
	// is made through it.
	os.Remove(filepath.Join(config, "stockade"))
	elsewhere := filepath.Join(base, "elsewhere")
	os.Mkdir(elsewhere, 0o700)
	if err := os.Symlink(filepath.Join(elsewhere, "x"), filepath.Join(config, "stockade")); err != nil {
		t.Fatal(err)
	}
	planted := privateDir{dir: filepath.Join(config, "stockade"), shownBy: config}
	if err := planted.make(); err == nil {
		t.Error("make through a planted link succeeded")
	}
	if _, err := os.Lstat(filepath.Join(elsewhere, "x")); err == nil {
		t.Error("make created the planted link's target")
	}
	os.Mkdir(filepath.Join(elsewhere, "x"), 0o700)

	for _, c := range []struct {
		name string
		p    policy.Policy
		want string // "" allowed
	}{
		{"ro inside the state directory", policy.Policy{Workdir: base, RO: []string{filepath.Join(state, "stockade", "audit")}}, "where stockade keeps its sessions' records"},
		{"rw inside the data directory", policy.Policy{Workdir: base, RW: []string{filepath.Join(data, "stockade", "homes")}}, "every project's sandbox HOME"},
		{"workdir where a planted link sends the configuration", policy.Policy{Workdir: filepath.Join(elsewhere, "x")}, "where stockade reads your own configuration"},
		{"a Slurm job's directory, read-only", policy.Policy{Workdir: home, RO: []string{jobs}}, ""},
		{"a Slurm job's directory, writable", policy.Policy{Workdir: home, RW: []string{jobs}}, "where stockade keeps its sessions' records"},
		{"a name's prefix only", policy.Policy{Workdir: filepath.Join(base, "dat")}, ""},
		{"elsewhere", policy.Policy{Workdir: home}, ""},
	} {
		_, err := privateExposure(home, c.p, "")
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want a refusal naming %q", c.name, err, c.want)
		}
	}
}

// TestPrivateExposureLinks: a link on the way to one of stockade's
// directories inside a tree the sandbox can write is refused (the command
// would replace it with a directory of its own, which stockade would use
// from then on); so is a directory in a system tree every sandbox sees, or
// in the sandbox HOME.
func TestPrivateExposureLinks(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home, proj, cfg, dot := filepath.Join(base, "home"), filepath.Join(base, "proj"), filepath.Join(base, "cfg"), filepath.Join(base, "dotfiles", "stockade")
	for _, d := range []string{home, proj, cfg, dot} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(dot, filepath.Join(cfg, "stockade")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_STATE_HOME", filepath.Join(base, "state"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(base, "data"))
	t.Setenv("XDG_CONFIG_HOME", cfg)
	sandboxHome := filepath.Join(base, "data", "stockade", "homes", "run-x")
	for _, c := range []struct {
		name string
		p    policy.Policy
		env  []string
		home string
		want string
	}{
		{"a link in a --rw tree", policy.Policy{Workdir: proj, RW: []string{cfg}}, nil, "", "is a symlink inside " + cfg},
		{"a link in the workdir", policy.Policy{Workdir: cfg}, nil, "", "is a symlink inside " + cfg},
		{"a link in a --ro tree only", policy.Policy{Workdir: proj, RO: []string{cfg}}, nil, "", ""},
		{"in a system tree", policy.Policy{Workdir: proj}, []string{"XDG_STATE_HOME", "/usr/share/stockade-test-absent"}, "", "which every sandbox sees: set XDG_STATE_HOME"},
		{"in the sandbox HOME", policy.Policy{Workdir: proj}, []string{"XDG_CONFIG_HOME", filepath.Join(sandboxHome, ".config")}, sandboxHome, "overlaps the sandbox HOME"},
		{"the sandbox HOME in the data directory", policy.Policy{Workdir: proj}, nil, sandboxHome, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.env != nil {
				t.Setenv(c.env[0], c.env[1])
			}
			_, err := privateExposure(home, c.p, c.home)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("%v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("%v, want a refusal naming %q", err, c.want)
			}
		})
	}
}

// TestTrustedFilesExposed: the files read as the user's word must be files
// of their own, outside every tree the sandbox sees.
func TestTrustedFilesExposed(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg, dot, proj := filepath.Join(base, "cfg"), filepath.Join(base, "dot"), filepath.Join(base, "proj")
	for _, d := range []string{filepath.Join(cfg, "stockade"), dot, proj} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("XDG_CONFIG_HOME", cfg)
	conf := filepath.Join(cfg, "stockade", "config.json")
	p := policy.Policy{Workdir: proj, RW: []string{dot}}
	writable := []string{proj, dot}
	if err := os.WriteFile(conf, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := trustedFilesExposed(p, writable, canons{}); err != nil {
		t.Errorf("a file of its own: %v", err)
	}
	os.Remove(conf)
	os.WriteFile(filepath.Join(dot, "c.json"), []byte("{}"), 0o600)
	os.Symlink(filepath.Join(dot, "c.json"), conf)
	if err := trustedFilesExposed(p, writable, canons{}); err == nil || !strings.Contains(err.Error(), "which the sandbox sees") {
		t.Errorf("a link into a --rw tree: %v", err)
	}
	if err := trustedFilesExposed(policy.Policy{Workdir: proj, RO: []string{dot}}, []string{proj}, canons{}); err == nil {
		t.Error("a link into a --ro tree (the keys of a stockaderc would be read) passed")
	}
	os.Remove(conf)
	os.Link(filepath.Join(dot, "c.json"), conf)
	if err := trustedFilesExposed(policy.Policy{Workdir: proj}, []string{proj}, canons{}); err == nil || !strings.Contains(err.Error(), "hard links") {
		t.Errorf("a second hard link: %v", err)
	}
}
