package sandboxnet

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOneOwner fails when a fact this package owns is written out again as a
// string literal in the module's code outside tests: a second copy is one
// that can drift. Comments and tests may spell the values out; they document
// the contract.
func TestOneOwner(t *testing.T) {
	facts := []string{
		HTTPProxyAddr, SOCKS5Addr, DNSAddr, AuthAddr, SlurmAddr, DummyKey, SSHAgentDir, GitHubDir,
		CaptureAddr, CaptureAddr6, CaptureBind, ":3128", ":1080", ":2376", ":3129", "nameserver " + Host,
		PodHost, RegistryProxyAddr, ":3130",
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	self, _ := filepath.Abs(".")
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || path == self) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for _, fact := range facts {
				if strings.Contains(s, fact) {
					rel, _ := filepath.Rel(root, path)
					t.Errorf("%s: the literal %q holds %q, which internal/sandboxnet owns; use its constant", rel, s, fact)
					break
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("walked %d Go files under %s; the walk is broken", files, root)
	}
}
