package policy

import (
	"io/fs"
	"strings"
	"testing"
	"time"
)

// fakeFS is an injected stat: path → is a directory.
type fakeFS map[string]bool

type fakeInfo struct {
	name string
	dir  bool
}

func (f fakeInfo) Name() string       { return f.name }
func (f fakeInfo) Size() int64        { return 0 }
func (f fakeInfo) Mode() fs.FileMode  { return map[bool]fs.FileMode{true: fs.ModeDir}[f.dir] }
func (f fakeInfo) ModTime() time.Time { return time.Time{} }
func (f fakeInfo) IsDir() bool        { return f.dir }
func (f fakeInfo) Sys() any           { return nil }

func (f fakeFS) stat(p string) (fs.FileInfo, error) {
	if p == "/denied" {
		return nil, fs.ErrPermission
	}
	dir, ok := f[p]
	if !ok {
		return nil, &fs.PathError{Op: "stat", Path: p, Err: fs.ErrNotExist}
	}
	return fakeInfo{p, dir}, nil
}

var machine = fakeFS{"/": true, "/home": true, "/home/u": true, "/home/u/p": true,
	"/home/u/p/file": false, "/srv": true, "/home/u/go": true}

func TestValidate(t *testing.T) {
	ok := Default("/home/u/p")
	ok.RO = []string{"/srv", "/home/u/go"}
	ok.RW = []string{"/home/u/go"}
	ok.Env = []string{"GITHUB_TOKEN"}
	with := func(f func(p *Policy)) Policy {
		p := ok
		f(&p)
		return p
	}
	tests := []struct {
		name string
		p    Policy
		want string // "" means valid
	}{
		{"ok", ok, ""},
		{"relative workdir", with(func(p *Policy) { p.Workdir = "p" }), `workdir "p" is not a clean absolute path`},
		{"unclean workdir", with(func(p *Policy) { p.Workdir = "/home/u/p/" }), "is not a clean absolute path"},
		{"missing workdir", with(func(p *Policy) { p.Workdir = "/nope" }), `workdir "/nope" (/nope) does not exist`},
		{"stat error", with(func(p *Policy) { p.Workdir = "/denied" }), "cannot be checked: permission denied"},
		{"file workdir", with(func(p *Policy) { p.Workdir = "/home/u/p/file" }), "is not a directory"},
		{"root workdir", with(func(p *Policy) { p.Workdir = "/" }),
			`workdir "/" is the root directory; run stockade in a project directory, or pass --workdir`},
		{"home workdir", with(func(p *Policy) { p.Workdir = "/home/u" }),
			`workdir "/home/u" is your home directory or contains it; run stockade in a project directory`},
		{"home parent workdir", with(func(p *Policy) { p.Workdir = "/home" }), "is your home directory or contains it"},
		{"rw root", with(func(p *Policy) { p.RW = []string{"/"} }), `rw "/" is the root directory; name the directory the agent needs`},
		{"rw home", with(func(p *Policy) { p.RW = []string{"/home/u"} }), `rw "/home/u" is your home directory or contains it`},
		{"ro home", with(func(p *Policy) { p.RO = []string{"/home/u"} }), `ro "/home/u" is your home directory`},
		{"ro missing", with(func(p *Policy) { p.RO = []string{"/gone"} }), `ro "/gone" (/gone) does not exist`},
		{"bad pattern", with(func(p *Policy) { p.Mask = []string{"../x"} }), `mask "../x" is not inside the workdir`},
		{"unclean pattern", with(func(p *Policy) { p.Protect = []string{"./x"} }), `write it as "x"`},
		{"bad env", with(func(p *Policy) { p.Env = []string{"A B=secret"} }), `env "A B" `},
		{"negative memory", with(func(p *Policy) { p.Memory = -1 }), "limits must be positive"},
		{"log level", with(func(p *Policy) { p.LogLevel = "" }), `log_level "" is not a log level`},
		{"network", with(func(p *Policy) { p.Network = "host" }), `network "host" is not a network mode`},
		{"terminal", with(func(p *Policy) { p.Terminal = "plain" }), `terminal "plain" is not a terminal mode`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.p, "/home/u", machine.stat)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v\nwant it to contain %s", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q shows an env value", err)
			}
		})
	}
	if err := Validate(with(func(p *Policy) { p.Workdir = "/home/u" }), "", machine.stat); err != nil {
		t.Errorf("no home given: %v", err)
	}
}

func TestResolvedValidate(t *testing.T) {
	r, err := Resolve("/home/u/p", Layer{Kind: KindFlag, Source: "flag", Workdir: ptr("/")})
	if err != nil {
		t.Fatal(err)
	}
	err = r.Validate("/home/u", machine.stat)
	if err == nil || !strings.HasPrefix(err.Error(), `flag --workdir: workdir "/" is the root directory`) {
		t.Errorf("error = %v, want the source first", err)
	}
	r, _ = Resolve("/home/u/p", Layer{Kind: KindUser, Source: "/u.json", RW: []string{"/home/u"}})
	if err := r.Validate("/home/u", machine.stat); err == nil || !strings.HasPrefix(err.Error(), `/u.json: rw "/home/u"`) {
		t.Errorf("error = %v, want the list entry's source first", err)
	}
}

func TestWarnings(t *testing.T) {
	p := Default("/home/u/p")
	if w := Warnings(p, "/home/u", 1000); len(w) != 0 {
		t.Errorf("default policy warns: %q", w)
	}
	p.AllowHooks = true
	p.Unmask = []string{".env.example"}
	p.RW = []string{"/home/u/p/sub", "/srv"}
	p.RO = []string{"/home/u/go", "/usr/share", "/home/u/p/x"}
	p.Env = []string{"GITHUB_TOKEN=hunter2", "GOFLAGS", "AWS_PROFILE"}
	p.Memory = 0
	p.SharedHome = true
	p.GitConfig = true
	got := Warnings(p, "/home/u", 0)
	want := []string{
		"running as root",
		"allow_hooks: git hooks are writable",
		"unmask .env.example: the agent can read it",
		"rw /srv: writable outside the workdir",
		"ro /home/u/go: part of your home directory is readable",
		"env GITHUB_TOKEN: a credential-shaped variable is passed in",
		"env AWS_PROFILE: a credential-shaped variable is passed in",
		"gitconfig: your git identity",
		"shared_home: one sandbox HOME for every project",
	}
	if len(got) != len(want) {
		t.Fatalf("Warnings = %d lines, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) || strings.Contains(got[i], "\n") || strings.Contains(got[i], "hunter2") {
			t.Errorf("warning %d = %q, want a line starting %q", i, got[i], want[i])
		}
	}
}

func TestResolvedWarnings(t *testing.T) {
	r, err := Resolve("/home/u/p",
		Layer{Kind: KindUser, Source: "/home/u/.config/stockade/config.json", Unmask: []string{".env"}},
		Layer{Kind: KindFlag, Source: "flag", AllowHooks: ptr(true)})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(r.Warnings("/home/u", 1000), "\n")
	for _, w := range []string{"(flag --allow-hooks)", "unmask .env: the agent can read it (/home/u/.config/stockade/config.json)"} {
		if !strings.Contains(got, w) {
			t.Errorf("warnings %q do not contain %q", got, w)
		}
	}
}
