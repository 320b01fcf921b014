package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// What docs/architecture.md may name, and how the test finds it.
var (
	// A path of the repository, after a space, a backquote or a parenthesis.
	repoPath = regexp.MustCompile("(?:^|[\\s`(])((?:internal|cmd|test|bench|scripts|docs)/[\\w./-]*[\\w/])")
	// A link to another page of docs/, with an optional heading.
	pageLink = regexp.MustCompile(`\]\(([\w.-]+\.md)(?:#([\w-]+))?\)`)
	// package.Name inside backquotes, for a package of internal/.
	codeSpan = regexp.MustCompile("`([^`\n]+)`")
	pkgName  = regexp.MustCompile(`\b([a-z]+)\.([A-Z]\w*)`)
)

// TestArchitectureNames fails when docs/architecture.md names a file or a
// package of the repository that does not exist, a package.Name that its
// package does not declare, or links to a page or heading of docs/ that is
// not there: the page describes the code, and must follow it when the code
// moves.
func TestArchitectureNames(t *testing.T) {
	const root = "../.."
	doc, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)

	paths := 0
	for _, m := range repoPath.FindAllStringSubmatch(text, -1) {
		paths++
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(m[1]))); err != nil {
			t.Errorf("docs/architecture.md names %s, which does not exist", m[1])
		}
	}

	links := 0
	for _, m := range pageLink.FindAllStringSubmatch(text, -1) {
		links++
		page, err := os.ReadFile(filepath.Join(root, "docs", m[1]))
		if err != nil {
			t.Errorf("docs/architecture.md links to %s, which does not exist", m[1])
			continue
		}
		if m[2] != "" && !headings(string(page))[m[2]] {
			t.Errorf("docs/architecture.md links to %s#%s, a heading that %s does not have", m[1], m[2], m[1])
		}
	}

	names := 0
	decls := map[string]map[string]bool{}
	for _, span := range codeSpan.FindAllStringSubmatch(text, -1) {
		for _, m := range pkgName.FindAllStringSubmatch(span[1], -1) {
			dir := filepath.Join(root, "internal", m[1])
			if _, err := os.Stat(dir); err != nil {
				continue // not one of ours: a file name, a host path
			}
			if decls[m[1]] == nil {
				decls[m[1]] = declared(t, dir)
			}
			names++
			if !decls[m[1]][m[2]] {
				t.Errorf("docs/architecture.md names %s.%s, which internal/%s does not declare", m[1], m[2], m[1])
			}
		}
	}
	if paths < 20 || links < 5 || names < 10 {
		t.Errorf("found only %d paths, %d links and %d package names in docs/architecture.md: the patterns of this test no longer match the page", paths, links, names)
	}
}

// declared returns the top-level names the package in dir declares, in
// every file but its tests, whatever their build constraints.
func declared(t *testing.T, dir string) map[string]bool {
	pkgs, err := parser.ParseDir(token.NewFileSet(), dir, func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	names := map[string]bool{}
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if d.Recv == nil {
						names[d.Name.Name] = true
					}
				case *ast.GenDecl:
					for _, s := range d.Specs {
						switch s := s.(type) {
						case *ast.TypeSpec:
							names[s.Name.Name] = true
						case *ast.ValueSpec:
							for _, n := range s.Names {
								names[n.Name] = true
							}
						}
					}
				}
			}
		}
	}
	return names
}

// headings returns the anchors of a markdown page's headings, as GitHub
// makes them: lower case, punctuation dropped, spaces as hyphens.
func headings(page string) map[string]bool {
	out := map[string]bool{}
	for line := range strings.Lines(page) {
		title, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if !strings.HasPrefix(line, "#") || !ok {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(title)) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || 'a' <= r && r <= 'z' || '0' <= r && r <= '9':
				b.WriteRune(r)
			}
		}
		out[b.String()] = true
	}
	return out
}

// TestDocLinks fails for a link of README.md or docs/ to a page of the
// repository, or to a heading of one, that is not there.
func TestDocLinks(t *testing.T) {
	const root = "../.."
	link := regexp.MustCompile(`\]\(([\w./-]+\.md)(?:#([\w-]+))?\)`)
	pages, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	pages = append(pages, filepath.Join(root, "README.md"))
	n := 0
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			n++
			target := filepath.Join(filepath.Dir(p), filepath.FromSlash(m[1]))
			page, err := os.ReadFile(target)
			switch {
			case err != nil:
				t.Errorf("%s links to %s, which does not exist", p, m[1])
			case m[2] != "" && !headings(string(page))[m[2]]:
				t.Errorf("%s links to %s#%s, a heading that page does not have", p, m[1], m[2])
			}
		}
	}
	if n < 20 {
		t.Errorf("found only %d links: the pattern of this test no longer matches the pages", n)
	}
}
