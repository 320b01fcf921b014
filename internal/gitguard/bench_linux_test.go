package gitguard

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkAfter measures Before and After on a project of
// GITGUARD_BENCH_FILES (50000) files with a .git, in two shapes: the tree
// of bench/ (100 files a directory) and a node_modules-like one (5 files a
// directory, 4 levels). Run with a warm page cache:
//
//	go test -run XXX -bench After -benchtime 20x ./internal/gitguard/
func BenchmarkAfter(b *testing.B) {
	files := 50000
	if s := os.Getenv("GITGUARD_BENCH_FILES"); s != "" {
		files, _ = strconv.Atoi(s)
	}
	for _, shape := range []struct {
		name    string
		perDir  int
		fanout  int // directories per directory
		nesting int
	}{{"wide", 100, 0, 1}, {"deep", 5, 10, 4}} {
		dir := b.TempDir()
		p := &project{t: &testing.T{}, dir: dir}
		p.gitdir(".git", inertConfig)
		for i := range files {
			d := treeDir(dir, i/shape.perDir, shape.fanout, shape.nesting)
			if i%shape.perDir == 0 {
				if err := os.MkdirAll(d, 0o755); err != nil {
					b.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%05d.js", i)), nil, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(shape.name+"/Before", func(b *testing.B) {
			for b.Loop() {
				if _, err := Before(dir, "b"); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(shape.name+"/After", func(b *testing.B) {
			g, err := Before(dir, "b")
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if fs, err := g.After(); err != nil || len(fs) > 0 {
					b.Fatal(fs, err)
				}
			}
		})
	}
}

// treeDir is the directory of the n-th group of files: flat ("d<n>") when
// fanout is 0, else n's digits in base fanout as nesting levels.
func treeDir(root string, n, fanout, nesting int) string {
	if fanout == 0 {
		return filepath.Join(root, fmt.Sprintf("d%04d", n))
	}
	parts := []string{root}
	for range nesting {
		parts = append(parts, fmt.Sprintf("p%d", n%fanout))
		n /= fanout
	}
	return filepath.Join(append(parts, fmt.Sprintf("q%d", n))...)
}
