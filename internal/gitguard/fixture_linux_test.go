package gitguard

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// project is a workdir under construction, and a directory outside it.
type project struct {
	t            *testing.T
	dir, outside string
}

func newProject(t *testing.T) *project {
	base := t.TempDir()
	p := &project{t: t, dir: filepath.Join(base, "proj"), outside: filepath.Join(base, "outside")}
	must(t, os.MkdirAll(p.dir, 0o755))
	must(t, os.MkdirAll(p.outside, 0o755))
	return p
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// file writes rel (parents made) with content and mode.
func (p *project) file(rel, content string, mode os.FileMode) {
	p.t.Helper()
	f := filepath.Join(p.dir, rel)
	must(p.t, os.MkdirAll(filepath.Dir(f), 0o755))
	must(p.t, os.WriteFile(f, []byte(content), mode))
	must(p.t, os.Chmod(f, mode))
}

func (p *project) exec(rel, content string) { p.file(rel, content, 0o755) }

func (p *project) link(target, rel string) {
	p.t.Helper()
	must(p.t, os.MkdirAll(filepath.Dir(filepath.Join(p.dir, rel)), 0o755))
	must(p.t, os.Symlink(target, filepath.Join(p.dir, rel)))
}

func (p *project) mkdir(rel string) { must(p.t, os.MkdirAll(filepath.Join(p.dir, rel), 0o755)) }

func (p *project) remove(rel string) { must(p.t, os.RemoveAll(filepath.Join(p.dir, rel))) }

func (p *project) read(rel string) string {
	b, err := os.ReadFile(filepath.Join(p.dir, rel))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// gitdir makes a git directory as git init would, with config cfg.
func (p *project) gitdir(rel, cfg string) {
	p.file(rel+"/HEAD", "ref: refs/heads/main\n", 0o644)
	p.mkdir(rel + "/objects/info")
	p.mkdir(rel + "/refs/heads")
	p.file(rel+"/config", cfg, 0o644)
	p.exec(rel+"/hooks/pre-commit.sample", "#!/bin/sh\n")
	p.file(rel+"/info/exclude", "# exclude\n", 0o644)
}

const (
	inertConfig = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
	fsmonitor   = "[core]\n\tfsmonitor = touch /tmp/stockade-gitguard-marker\n"
)

// rel is f's path relative to the project, for comparing.
func (p *project) rel(path string) string {
	r, err := filepath.Rel(p.dir, path)
	if err != nil {
		return path
	}
	return r
}

func mkfifo(t *testing.T, path string) {
	must(t, os.MkdirAll(filepath.Dir(path), 0o755))
	must(t, syscall.Mkfifo(path, 0o644))
}

func summary(p *project, fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, p.rel(f.Path)+": "+f.What)
	}
	return out
}

func matches(got []string, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if !strings.HasPrefix(got[i], want[i]) {
			return false
		}
	}
	return true
}
