package gatehouse_test

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The house's import rules (docs/architecture.md), asserted on the real
// package graph (go list -deps) and the real source (go/ast), so a change
// that breaks one fails CI instead of waiting for a reviewer to notice.

const module = "github.com/gatehouse/gatehouse"

// pkg is what go list says of one package of the module.
type pkg struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
	Deps       []string
}

// rel is path without the module prefix: "." for the root.
func rel(path string) string {
	if path == module {
		return "."
	}
	return strings.TrimPrefix(path, module+"/")
}

func under(p, root string) bool { return p == root || strings.HasPrefix(p, root+"/") }

func listPackages(t *testing.T) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps=false", "-json", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 50 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	return pkgs
}

// own is the module's packages among paths, relative.
func own(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p == module || strings.HasPrefix(p, module+"/") {
			out = append(out, rel(p))
		}
	}
	return out
}

// harness reports whether a package exists for tests only: a whole-stack
// harness, a conformance suite or a fake platform server. Production code
// never imports one.
func harness(p string) bool {
	for _, h := range harnessRoots {
		if under(p, h) {
			return true
		}
	}
	for _, seg := range strings.Split(p, "/") {
		if strings.HasSuffix(seg, "test") { // storetest, kerneltest, telegramtest/tghtml, …
			return true
		}
	}
	return false
}

// harnessRoots are the test harnesses whose names do not end in "test".
var harnessRoots = []string{"internal/testing",
	"adapters/internal/platformfake"}

// surfaces are the packages people reach the agent through; none imports
// another.
var surfaces = []string{"httpapi", "adapters/telegram", "adapters/discord", "adapters/slackchat"}

// layerRule is one rule over a package and its dependencies; it returns
// what breaks it.
type layerRule struct {
	name  string
	check func(p string, deps []string) []string
}

var layerRules = []layerRule{
	{"store never imports kernel or gateway", func(p string, deps []string) []string {
		if !under(p, "store") || harness(p) {
			return nil
		}
		return matching(deps, func(d string) bool { return under(d, "kernel") || under(d, "gateway") })
	}},
	{"adapters import only gateway/chat of the gateway, and neither kernel nor store", func(p string, deps []string) []string {
		if !under(p, "adapters") || harness(p) {
			return nil
		}
		return matching(deps, func(d string) bool {
			return (under(d, "gateway") && !under(d, "gateway/chat")) || under(d, "kernel") || under(d, "store")
		})
	}},
	{"no surface imports another", func(p string, deps []string) []string {
		mine := ""
		for _, s := range surfaces {
			if under(p, s) {
				mine = s
			}
		}
		if mine == "" || harness(p) {
			return nil
		}
		return matching(deps, func(d string) bool {
			for _, s := range surfaces {
				if s != mine && under(d, s) {
					return true
				}
			}
			return false
		})
	}},
	{"production code never imports a test harness", func(p string, deps []string) []string {
		if harness(p) {
			return nil
		}
		return matching(deps, harness)
	}},
}

func matching(deps []string, bad func(string) bool) []string {
	var out []string
	for _, d := range deps {
		if bad(d) {
			out = append(out, d)
		}
	}
	return out
}

// checkLayers returns every rule a package graph breaks.
func checkLayers(graph map[string][]string) []string {
	var broken []string
	names := make([]string, 0, len(graph))
	for p := range graph {
		names = append(names, p)
	}
	slices.Sort(names)
	for _, r := range layerRules {
		for _, p := range names {
			if bad := r.check(p, graph[p]); len(bad) > 0 {
				broken = append(broken, r.name+": "+p+" depends on "+strings.Join(bad, ", "))
			}
		}
	}
	return broken
}

func TestImportLayers(t *testing.T) {
	pkgs := listPackages(t)
	// The full (transitive) dependencies of each package's production
	// files: go list -deps of the package itself, test files left out.
	graph := map[string][]string{}
	direct := map[string][]string{}
	for _, p := range pkgs {
		direct[rel(p.ImportPath)] = own(p.Imports)
	}
	var closure func(p string, seen map[string]bool)
	closure = func(p string, seen map[string]bool) {
		for _, d := range direct[p] {
			if !seen[d] {
				seen[d] = true
				closure(d, seen)
			}
		}
	}
	for p := range direct {
		seen := map[string]bool{}
		closure(p, seen)
		for d := range seen {
			graph[p] = append(graph[p], d)
		}
		slices.Sort(graph[p])
	}
	for _, b := range checkLayers(graph) {
		t.Error(b)
	}
}

// The rules catch what they are for: a bad import of each kind, in a
// made-up graph.
func TestImportLayersCatchBadImports(t *testing.T) {
	for _, tc := range []struct {
		graph map[string][]string
		want  string
	}{
		{map[string][]string{"store/sqlite": {"kernel"}}, "store never imports"},
		{map[string][]string{"adapters/telegram": {"gateway/outbox"}}, "adapters import only"},
		{map[string][]string{"httpapi/web": {"adapters/slackchat"}}, "no surface imports another"},
		{map[string][]string{"toolworker": {"internal/testing/stacktest"}}, "never imports a test harness"},
		{map[string][]string{"gates": {"store/storetest"}}, "never imports a test harness"},
	} {
		got := checkLayers(tc.graph)
		if len(got) != 1 || !strings.Contains(got[0], tc.want) {
			t.Errorf("%v: %v, want one break of %q", tc.graph, got, tc.want)
		}
	}
	if got := checkLayers(map[string][]string{"adapters/telegram": {"gateway/chat", "."}, "store/storetest": {"kernel"}, "cmd/gatehouse": {"httpapi", "adapters/telegram"}}); len(got) != 0 {
		t.Errorf("allowed imports refused: %v", got)
	}
}

// callRule is a function only some packages may call.
type callRule struct {
	name    string
	calls   func(sel *ast.SelectorExpr) bool
	allowed func(p string) bool
}

var callRules = []callRule{
	{"only cmd reads the environment (and guard's pass-through to its child, and internal/testing/testenv)",
		func(sel *ast.SelectorExpr) bool {
			x, ok := sel.X.(*ast.Ident)
			return ok && x.Name == "os" && (sel.Sel.Name == "Getenv" || sel.Sel.Name == "LookupEnv" || sel.Sel.Name == "Environ")
		},
		func(p string) bool { return under(p, "cmd") || p == "guard" || p == "internal/testing/testenv" }},
	{"only gates and the store drivers write gates (InsertGate, DecideGate)",
		func(sel *ast.SelectorExpr) bool { return sel.Sel.Name == "InsertGate" || sel.Sel.Name == "DecideGate" },
		func(p string) bool {
			return under(p, "gates") || under(p, "store/sqlite") || under(p, "store/postgres") || harness(p)
		}},
}

// checkCalls returns the calls in file (of package p) that a rule forbids.
func checkCalls(p, name string, file *ast.File, fset *token.FileSet) []string {
	var broken []string
	ast.Inspect(file, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		for _, r := range callRules {
			if r.calls(sel) && !r.allowed(p) {
				broken = append(broken, r.name+": "+fset.Position(call.Pos()).String())
			}
		}
		return true
	})
	return broken
}

func TestOnlyTheirOwnersCall(t *testing.T) {
	fset := token.NewFileSet()
	for _, p := range listPackages(t) {
		rp := rel(p.ImportPath)
		for _, f := range p.GoFiles {
			path := filepath.Join(p.Dir, f)
			file, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range checkCalls(rp, path, file, fset) {
				t.Error(b)
			}
		}
	}
}

// The call rules catch what they are for: a stray gate write and an
// environment read, in made-up sources.
func TestOnlyTheirOwnersCallCatchesStrays(t *testing.T) {
	fset := token.NewFileSet()
	src := `package x
import "os"
func f(tx interface{ InsertGate(); DecideGate() }) { tx.InsertGate(); tx.DecideGate(); _ = os.Getenv("X") }`
	file, err := parser.ParseFile(fset, "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := checkCalls("supervisor", "x.go", file, fset); len(got) != 3 {
		t.Errorf("stray calls in supervisor: %v, want 3", got)
	}
	if got := checkCalls("gates", "x.go", file, fset); len(got) != 1 || !strings.Contains(got[0], "environment") {
		t.Errorf("in gates: %v, want only the environment read", got)
	}
	if got := checkCalls("cmd/gatehouse", "x.go", file, fset); len(got) != 2 {
		t.Errorf("in cmd: %v, want the two gate writes", got)
	}
}
