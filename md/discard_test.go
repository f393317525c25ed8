package md_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// md's setters (Scope's Prio, Truncate, From, Otherwise, OnDrop and
// XMLElement's Memo) return a new node and leave the one they are called on
// as it was. A call whose result is thrown away therefore does nothing,
// silently: that is how the assistant's Active Skills section once lost its
// priority. The compiler does not catch it, and neither does staticcheck
// (SA4017 does not see these methods as pure), so these tests type-check
// every package of the module, tests included, and look for such calls.

const mdPath = "github.com/loomctx/loom/md"

// setters are the methods that must be found as setters: if the search
// below misses one, the guard would pass for the wrong reason.
var setters = []string{"Memo", "OnDrop", "Otherwise", "From", "Prio", "Truncate"}

func TestNoSetterResultDiscarded(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks every package of the module")
	}
	mod := listModule(t)
	found := 0
	var problems []string
	for _, p := range mod.checked {
		files, info, err := mod.check(p.ImportPath, p.Dir, p.GoFiles)
		if err != nil {
			t.Fatalf("%s: %v", p.ImportPath, err)
		}
		found++
		problems = append(problems, discardedSetters(mod.fset, files, info)...)
	}
	if found < 20 {
		t.Fatalf("only %d packages checked; is `go list` seeing the module?", found)
	}
	slices.Sort(problems)
	for _, p := range slices.Compact(problems) {
		t.Errorf("%s", p)
	}
}

// TestDiscardedSetterIsFound proves the guard can fail: the example in
// testdata/discard throws away the result of each setter once, in each way
// a result can be thrown away, beside uses that keep it and a bytes.Buffer
// Truncate that has nothing to return. Each line that must be found ends
// with "// discarded".
func TestDiscardedSetterIsFound(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks every package of the module")
	}
	mod := listModule(t)
	dir := filepath.Join("testdata", "discard")
	files, info, err := mod.check("example.com/discard", dir, []string{"example.go"})
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(dir, "example.go"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i, line := range strings.Split(string(src), "\n") {
		if strings.HasSuffix(line, "// discarded") {
			want = append(want, fmt.Sprintf("%s:%d", filepath.Join(dir, "example.go"), i+1))
		}
	}
	var got []string
	found := discardedSetters(mod.fset, files, info)
	for _, p := range found {
		got = append(got, p[:strings.Index(p, ": ")])
	}
	if !slices.Equal(got, want) {
		t.Errorf("found at\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	for _, name := range setters {
		if !slices.ContainsFunc(found, func(p string) bool { return strings.Contains(p, "."+name+" is discarded") }) {
			t.Errorf("the discarded %s in the example was not found", name)
		}
	}
}

// discardedSetters returns "file:line: ..." for each call of an md setter
// whose result is not used: a call standing as a statement, deferred, run
// by go, or assigned to _ alone.
func discardedSetters(fset *token.FileSet, files []*ast.File, info *types.Info) []string {
	var out []string
	flag := func(e ast.Expr) {
		call, ok := ast.Unparen(e).(*ast.CallExpr)
		if !ok {
			return
		}
		sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
		if !ok {
			return
		}
		if name, ok := setter(info.Selections[sel]); ok {
			pos := fset.Position(call.Pos())
			out = append(out, fmt.Sprintf("%s:%d: the result of %s is discarded, so the call does nothing (it returns a new node)", pos.Filename, pos.Line, name))
		}
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch s := n.(type) {
			case *ast.ExprStmt:
				flag(s.X)
			case *ast.DeferStmt:
				flag(s.Call)
			case *ast.GoStmt:
				flag(s.Call)
			case *ast.AssignStmt:
				if len(s.Rhs) == 1 && len(s.Lhs) == 1 {
					if id, ok := s.Lhs[0].(*ast.Ident); ok && id.Name == "_" {
						flag(s.Rhs[0])
					}
				}
			}
			return true
		})
	}
	return out
}

// setter reports whether sel selects a setter of package md: a method
// whose one result has the type of its receiver.
func setter(sel *types.Selection) (string, bool) {
	if sel == nil || sel.Kind() != types.MethodVal {
		return "", false
	}
	fn := sel.Obj().(*types.Func)
	if fn.Pkg() == nil || fn.Pkg().Path() != mdPath {
		return "", false
	}
	sig := fn.Signature()
	if sig.Results().Len() != 1 || !types.Identical(sig.Results().At(0).Type(), sig.Recv().Type()) {
		return "", false
	}
	return types.TypeString(sig.Recv().Type(), types.RelativeTo(fn.Pkg())) + "." + fn.Name(), true
}

// listedPackage is what `go list -json` says of one package.
type listedPackage struct {
	ImportPath string
	Dir        string
	Export     string
	ForTest    string
	DepOnly    bool
	GoFiles    []string
	ImportMap  map[string]string
	Module     *struct{ Path string }
	Error      *struct{ Err string }
}

// module is the module's packages, with where the compiled form (export
// data) of every package they import is.
type module struct {
	fset    *token.FileSet
	exports map[string]string // package ID (as go list names it) → export data file
	maps    map[string]map[string]string
	checked []listedPackage // each package once, as its test variant when it has tests
}

// listModule lists the module once for both tests.
func listModule(t *testing.T) *module {
	t.Helper()
	listOnce.Do(func() { listed, listErr = goList() })
	if listErr != nil {
		t.Fatal(listErr)
	}
	return listed
}

var (
	listOnce sync.Once
	listed   *module
	listErr  error
)

func goList() (*module, error) {
	cmd := exec.Command("go", "list", "-e", "-export", "-deps", "-test", "-json=ImportPath,Dir,Export,ForTest,DepOnly,GoFiles,ImportMap,Module,Error", "./...")
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v\n%s", err, stderr.Bytes())
	}
	m := &module{fset: token.NewFileSet(), exports: map[string]string{}, maps: map[string]map[string]string{}}
	var own []listedPackage
	variant := map[string]bool{} // packages checked through their test variant
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %v", err)
		}
		m.exports[p.ImportPath] = p.Export
		m.maps[p.ImportPath] = p.ImportMap
		if p.DepOnly || p.Module == nil || p.Module.Path != "github.com/loomctx/loom" || strings.HasSuffix(p.ImportPath, ".test") {
			continue
		}
		if p.Error != nil {
			return nil, fmt.Errorf("%s: %s", p.ImportPath, p.Error.Err)
		}
		path, _, isVariant := strings.Cut(p.ImportPath, " [")
		if isVariant {
			if p.ForTest != path && p.ForTest+"_test" != path {
				continue // a dependency rebuilt for another package's tests
			}
			variant[path] = true
		}
		own = append(own, p)
	}
	for _, p := range own {
		if !strings.Contains(p.ImportPath, " [") && variant[p.ImportPath] {
			continue
		}
		m.checked = append(m.checked, p)
	}
	return m, nil
}

// check parses and type-checks the named files of dir as the package id,
// its imports read from their export data as go list resolved them for id.
func (m *module) check(id, dir string, names []string) ([]*ast.File, *types.Info, error) {
	var files []*ast.File
	for _, name := range names {
		f, err := parser.ParseFile(m.fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, nil, err
		}
		files = append(files, f)
	}
	imports := m.maps[id]
	lookup := func(path string) (io.ReadCloser, error) {
		if mapped, ok := imports[path]; ok {
			path = mapped
		}
		file := m.exports[path]
		if file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	}
	conf := types.Config{Importer: importer.ForCompiler(m.fset, "gc", lookup)}
	info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}}
	path, _, _ := strings.Cut(id, " [")
	if _, err := conf.Check(path, m.fset, files, info); err != nil {
		return nil, nil, err
	}
	return files, info, nil
}
