package sandbox

import (
	"fmt"
	"go/ast"
	gobuild "go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

// The checker of init's contract (child_linux.go): from init's entries,
// every function reachable by a static call is found by name and checked,
// its directives and its body, the way gVisor fences its fork stubs.

// initEntries are where init starts, per architecture: functions, or
// methods as "Type.Method".
var initEntries = map[string][]string{
	"amd64": {"initEntry"},
	"arm64": {"program.initMain"},
}

// contractCalls are the functions of other packages init may call.
var contractCalls = []string{"syscall.RawSyscall6"}

// contractBuiltins are the builtins (and unsafe's functions) init may use.
var contractBuiltins = []string{"len", "cap", "min", "max", "Add", "Sizeof", "Offsetof", "Alignof"}

// srcImporters type-check imports from source, for linux on each
// architecture (the importer reads go/build's Default context).
var (
	srcImportersMu sync.Mutex
	srcImporters   = map[string]types.Importer{}
)

type archImporter struct {
	arch string
	imp  types.Importer
}

func (a archImporter) Import(path string) (*types.Package, error) {
	old := gobuild.Default
	defer func() { gobuild.Default = old }()
	gobuild.Default.GOOS, gobuild.Default.GOARCH, gobuild.Default.CgoEnabled = "linux", a.arch, false
	return a.imp.Import(path)
}

func srcImporter(arch string) types.Importer {
	srcImportersMu.Lock()
	defer srcImportersMu.Unlock()
	if srcImporters[arch] == nil {
		srcImporters[arch] = archImporter{arch, importer.ForCompiler(token.NewFileSet(), "source", nil)}
	}
	return srcImporters[arch]
}

// loadPackage parses and type-checks the non-test files of the package in
// dir as built for linux/arch.
func loadPackage(t *testing.T, dir, arch string) (*token.FileSet, []*ast.File, *types.Info) {
	t.Helper()
	ctx := gobuild.Default
	ctx.GOOS, ctx.GOARCH, ctx.CgoEnabled = "linux", arch, false
	bp, err := ctx.ImportDir(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return fset, files, typeCheck(t, fset, files, arch)
}

func typeCheck(t *testing.T, fset *token.FileSet, files []*ast.File, arch string) *types.Info {
	t.Helper()
	info := &types.Info{
		Types: map[ast.Expr]types.TypeAndValue{}, Defs: map[*ast.Ident]types.Object{},
		Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{},
	}
	conf := types.Config{Importer: srcImporter(arch), Sizes: types.SizesFor("gc", arch)}
	if _, err := conf.Check(files[0].Name.Name, fset, files, info); err != nil {
		t.Fatalf("type-checking: %v", err)
	}
	return info
}

// funcKey is how a declaration is named in initEntries and the reports:
// "f", or "T.m" for a method of T or *T.
func funcKey(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return d.Name.Name
	}
	typ := d.Recv.List[0].Type
	if s, ok := typ.(*ast.StarExpr); ok {
		typ = s.X
	}
	if ix, ok := typ.(*ast.IndexExpr); ok {
		typ = ix.X
	}
	return typ.(*ast.Ident).Name + "." + d.Name.Name
}

// checkContract returns the violations of init's contract in files, each
// as "function: what", sorted, and the functions it checked.
func checkContract(fset *token.FileSet, files []*ast.File, info *types.Info, entries []string) (violations, checked []string) {
	decls := map[string]*ast.FuncDecl{}
	byObj := map[types.Object]string{}
	for _, f := range files {
		unsafeFile := strings.HasPrefix(filepath.Base(fset.File(f.Pos()).Name()), "init_unsafe")
		for _, cg := range f.Comments {
			for _, c := range cg.List {
				if strings.HasPrefix(c.Text, "//go:linkname") && !unsafeFile {
					violations = append(violations, fmt.Sprintf("%s: a linkname outside the init_unsafe files", fset.Position(c.Pos())))
				}
			}
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok {
				decls[funcKey(fd)] = fd
				byObj[info.Defs[fd.Name]] = funcKey(fd)
				if fd.Body == nil && !unsafeFile {
					violations = append(violations, funcKey(fd)+": an assembly declaration outside the init_unsafe files")
				}
			}
		}
	}
	seen := map[string]bool{}
	work := slices.Clone(entries)
	for len(work) > 0 {
		name := work[0]
		work = work[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		d := decls[name]
		if d == nil {
			violations = append(violations, name+": entry not found")
			continue
		}
		checked = append(checked, name)
		if d.Body == nil {
			continue // assembly: checked above to be declared in init_unsafe
		}
		bad := func(format string, args ...any) {
			violations = append(violations, name+": "+fmt.Sprintf(format, args...))
		}
		for _, dir := range []string{"//go:nosplit", "//go:norace"} {
			if d.Doc == nil || !slices.ContainsFunc(d.Doc.List, func(c *ast.Comment) bool { return c.Text == dir }) {
				bad("no %s", dir)
			}
		}
		calls := map[ast.Expr]bool{}
		ast.Inspect(d.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				calls[n.Fun] = true
				if callee, ok := checkCall(info, byObj, n, bad); ok {
					work = append(work, callee)
				}
			case *ast.FuncLit:
				bad("a closure")
			case *ast.DeferStmt:
				bad("a defer")
			case *ast.GoStmt:
				bad("a go statement")
			case *ast.SelectStmt, *ast.SendStmt:
				bad("a channel operation")
			case *ast.UnaryExpr:
				if n.Op == token.ARROW {
					bad("a channel operation")
				}
				if _, ok := ast.Unparen(n.X).(*ast.CompositeLit); ok && n.Op == token.AND {
					bad("&T{} allocates")
				}
			case *ast.TypeAssertExpr, *ast.TypeSwitchStmt:
				bad("a type assertion")
			case *ast.CompositeLit:
				switch info.Types[n].Type.Underlying().(type) {
				case *types.Slice, *types.Map:
					bad("a slice or map literal allocates")
				}
			case *ast.BinaryExpr:
				if isString(info.Types[n.X].Type) && n.Op == token.ADD {
					bad("string concatenation allocates")
				}
			case *ast.IndexExpr:
				if _, ok := info.Types[n.X].Type.Underlying().(*types.Map); ok {
					bad("a map")
				}
			case *ast.RangeStmt:
				switch info.Types[n.X].Type.Underlying().(type) {
				case *types.Map, *types.Chan:
					bad("range over a map or channel")
				case *types.Basic:
					if isString(info.Types[n.X].Type) {
						bad("range over a string calls the runtime")
					}
				}
			case *ast.SelectorExpr:
				if s := info.Selections[n]; s != nil && s.Kind() == types.MethodVal && !calls[n] {
					bad("a method value %s allocates", n.Sel.Name)
				}
			case *ast.Ident:
				if v, ok := info.Uses[n].(*types.Var); ok && v.Pkg() != nil && v.Parent() == v.Pkg().Scope() {
					bad("package-level variable %s.%s", v.Pkg().Name(), v.Name())
				}
			}
			return true
		})
	}
	sort.Strings(violations)
	sort.Strings(checked)
	return violations, checked
}

// checkCall checks one call in init's code and returns the function of
// this package it reaches, if any.
func checkCall(info *types.Info, byObj map[types.Object]string, call *ast.CallExpr, bad func(string, ...any)) (string, bool) {
	fun := ast.Unparen(call.Fun)
	if ix, ok := fun.(*ast.IndexExpr); ok { // an explicit instantiation
		fun = ix.X
	}
	if tv := info.Types[fun]; tv.IsType() {
		to := tv.Type.Underlying()
		if _, ok := to.(*types.Interface); ok || isString(to) {
			bad("a conversion to %s allocates", tv.Type)
		}
		if s, ok := to.(*types.Slice); ok && len(call.Args) == 1 && isString(info.Types[call.Args[0]].Type) {
			bad("a conversion to %s allocates", s)
		}
		return "", false
	}
	var id *ast.Ident
	switch f := fun.(type) {
	case *ast.Ident:
		id = f
	case *ast.SelectorExpr:
		id = f.Sel
	default:
		bad("a call of a function value")
		return "", false
	}
	switch obj := info.Uses[id].(type) {
	case *types.Builtin:
		if !slices.Contains(contractBuiltins, obj.Name()) {
			bad("builtin %s", obj.Name())
		}
	case *types.Func:
		obj = obj.Origin()
		if name, ok := byObj[obj]; ok {
			return name, true
		}
		if full := obj.Pkg().Path() + "." + obj.Name(); !slices.Contains(contractCalls, full) {
			bad("calls %s, outside the contract", full)
		}
	default:
		bad("a call of a function value %s", id.Name)
	}
	return "", false
}

// hasDirective reports whether the function name in files has directive.
func hasDirective(files []*ast.File, name, directive string) bool {
	for _, f := range files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && funcKey(fd) == name && fd.Doc != nil {
				for _, c := range fd.Doc.List {
					if c.Text == directive {
						return true
					}
				}
			}
		}
	}
	return false
}

func isString(t types.Type) bool {
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Info()&types.IsString != 0
}

// TestInitContract: everything reachable from init's entries keeps the
// contract, on every architecture init runs on.
func TestInitContract(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		t.Run(arch, func(t *testing.T) {
			fset, files, info := loadPackage(t, ".", arch)
			violations, checked := checkContract(fset, files, info, initEntries[arch])
			for _, v := range violations {
				t.Error(v)
			}
			// On arm64 the child returns from the clone into startInit,
			// which must have no race instrumentation either.
			if arch == "arm64" && !hasDirective(files, "startInit", "//go:norace") {
				t.Error("startInit (arm64): no //go:norace, and the child runs its end")
			}
			// Not vacuous: the walk reaches the whole of init.
			for _, want := range []string{"program.initMain", "program.confine", "program.command", "program.supervise", "program.bindAt", "sys", "ptr", "exitCode", "vfork"} {
				if !slices.Contains(checked, want) {
					t.Errorf("%s not reached from %v; checked %v", want, initEntries[arch], checked)
				}
			}
		})
	}
}

// TestInitContractCatches: the checker finds each kind of breach, in a
// small package shaped like init.
func TestInitContractCatches(t *testing.T) {
	const head = `package sandbox

import (
	"os"
	"syscall"
	"unsafe"
)

var counter int

type program struct {
	buf  [8]byte
	f    func()
	s    []int
	name string
}

//go:nosplit
//go:norace
func initEntry(p *program) { p.initMain() }

//go:nosplit
//go:norace
func ok(p *program) uintptr {
	r, _, _ := syscall.RawSyscall6(1, uintptr(unsafe.Pointer(&p.buf[0])), uintptr(len(p.buf)), 0, 0, 0, 0)
	_, _ = vfork()
	return r + unsafe.Sizeof(p.buf)
}

var _ = os.Getpid
`
	for _, tc := range []struct {
		name, body, want string // body: initMain's; want: in a violation
	}{
		{"clean", "//go:nosplit\n//go:norace\nfunc (p *program) initMain() { ok(p) }", ""},
		{"no nosplit", "//go:norace\nfunc (p *program) initMain() { ok(p) }", "no //go:nosplit"},
		{"no norace", "//go:nosplit\nfunc (p *program) initMain() { ok(p) }", "no //go:norace"},
		{"callee without directives", "//go:nosplit\n//go:norace\nfunc (p *program) initMain() { helper() }\nfunc helper() {}", "helper: no //go:nosplit"},
		{"package variable", "//go:nosplit\n//go:norace\nfunc (p *program) initMain() { counter++ }", "package-level variable sandbox.counter"},
		{"other package's variable", "//go:nosplit\n//go:norace\nfunc (p *program) initMain() { _ = os.Args }", "package-level variable os.Args"},
		{"runtime call", "//go:nosplit\n//go:norace\nfunc (p *program) initMain() { os.Exit(1) }", "calls os.Exit"},
		{"make", "//go:nosplit\n//go:norace\nfunc (p *program) initMain() { p.s = make([]int, 1) }", "builtin make"},
		{"append", "//go:nosplit\n//go:norace\nfunc (p *program) initMain() { p.s = append(p.s, 1) }", "builtin append"},
		{"slice literal", "//go:nosplit\n//go:norace\nfunc (p *program) initMain() { p.s = []int{1} }", "slice or map literal"},
		{"address of literal", "//go:nosplit\n//go:norace\nfunc (p *program) initMain() { q := &program{}; _ = q }", "&T{}"},
		{"closure", "//go:nosplit\n//go:norace\nfunc (p *program) initMain() { p.f = func() {} }", "a closure"},
		{"function value", "//go:nosplit\n//go:norace\nfunc (p *program) initMain() { p.f() }", "function value"},
		{"method value", "//go:nosplit\n//go:norace\nfunc (p *program) initMain() { p.f = p.initMain }", "method value"},
		{"defer", "//go:nosplit\n//go:norace\nfunc (p *program) initMain() { defer ok(p) }", "a defer"},
		{"concatenation", "//go:nosplit\n//go:norace\nfunc (p *program) initMain() { p.name = p.name + \"x\" }", "concatenation"},
		{"string conversion", "//go:nosplit\n//go:norace\nfunc (p *program) initMain() { p.name = string(p.buf[:]) }", "conversion to string"},
		{"interface", "//go:nosplit\n//go:norace\nfunc (p *program) initMain() { var x any = any(p); _ = x }", "conversion to any"},
		{"panic", "//go:nosplit\n//go:norace\nfunc (p *program) initMain() { panic(1) }", "builtin panic"},
		{"linkname outside unsafe", "//go:linkname x runtime.x\nfunc x()\n//go:nosplit\n//go:norace\nfunc (p *program) initMain() { ok(p) }", "outside the init_unsafe files"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "child_linux.go", head+"\n"+tc.body+"\n", parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			// The assembly glue, in its file as in the package.
			glue, err := parser.ParseFile(fset, "init_unsafe_linux.go", "package sandbox\n\nimport \"syscall\"\n\nfunc vfork() (uintptr, syscall.Errno)\n", parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			files := []*ast.File{f, glue}
			info := typeCheck(t, fset, files, "amd64")
			violations, _ := checkContract(fset, files, info, []string{"initEntry"})
			if tc.want == "" {
				if len(violations) != 0 {
					t.Errorf("violations %q, want none", violations)
				}
				return
			}
			if !slices.ContainsFunc(violations, func(v string) bool { return strings.Contains(v, tc.want) }) {
				t.Errorf("violations %q, want one with %q", violations, tc.want)
			}
		})
	}
}
