package main

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The package structure for docs/architecture.md: which of the project's
// packages import which, as a Mermaid graph GitHub draws. Read from the
// import lines of the non-test files under root, so that the picture is the
// code's (a stale one fails docgen's test); `go run ./internal/docgen
// -imports DIR` prints it for another checkout (an older commit's, for a
// before-and-after).

// module is the import path prefix of the project's own packages.
const module = "github.com/lockjepsen/lockjepsen/"

// structural reports whether a folder is part of the structure a reader
// needs: the programs that measure the tree, the examples and the test
// helpers are left out.
func structural(dir string) bool {
	if dir == "." || strings.HasPrefix(dir, "scripts") || strings.HasPrefix(dir, "examples") {
		return false
	}
	return !strings.Contains(filepath.Base(dir), "test")
}

// importGraph maps each structural package folder under root to the
// structural folders its non-test files import, and counts those files.
func importGraph(root string) (map[string][]string, map[string]int, error) {
	g := map[string][]string{}
	files := map[string]int{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if n := d.Name(); rel != "." && (strings.HasPrefix(n, ".") || n == "testdata" || n == "results" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		dir := filepath.Dir(rel)
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || !structural(dir) {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return fmt.Errorf("read the imports of %s: %w", rel, err)
		}
		if _, ok := g[dir]; !ok {
			g[dir] = nil
		}
		files[dir]++
		for _, im := range f.Imports {
			path := strings.Trim(im.Path.Value, `"`)
			if to, ok := strings.CutPrefix(path, module); ok && structural(to) && !slices.Contains(g[dir], to) {
				g[dir] = append(g[dir], to)
			}
		}
		return nil
	})
	return g, files, err
}

// reduce drops every edge a longer path already implies (Go's imports form
// a DAG), so that the picture shows each package's nearest layers only.
func reduce(g map[string][]string) map[string][]string {
	reach := map[string]map[string]bool{}
	var visit func(string) map[string]bool
	visit = func(n string) map[string]bool {
		if r, ok := reach[n]; ok {
			return r
		}
		r := map[string]bool{}
		reach[n] = r
		for _, m := range g[n] {
			r[m] = true
			for k := range visit(m) {
				r[k] = true
			}
		}
		return r
	}
	out := map[string][]string{}
	for n, succ := range g {
		out[n] = nil
		for _, m := range succ {
			implied := false
			for _, o := range succ {
				if o != m && visit(o)[m] {
					implied = true
					break
				}
			}
			if !implied {
				out[n] = append(out[n], m)
			}
		}
		slices.Sort(out[n])
	}
	return out
}

// mermaid renders the reduced graph, each package with its number of
// non-test files, the deployments in a box of their own.
func mermaid(g map[string][]string, files map[string]int) string {
	var b strings.Builder
	id := func(dir string) string { return strings.NewReplacer("/", "_", "-", "_").Replace(dir) }
	nodes := make([]string, 0, len(g))
	for n := range g {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	b.WriteString("```mermaid\nflowchart TD\n")
	b.WriteString("  subgraph deployments\n")
	for _, n := range nodes {
		if strings.HasPrefix(n, "deployments/") {
			fmt.Fprintf(&b, "    %s[%s · %d]\n", id(n), strings.TrimPrefix(n, "deployments/"), files[n])
		}
	}
	b.WriteString("  end\n")
	for _, n := range nodes {
		if !strings.HasPrefix(n, "deployments/") {
			fmt.Fprintf(&b, "  %s[%s · %d]\n", id(n), n, files[n])
		}
	}
	for _, n := range nodes {
		for _, m := range g[n] {
			fmt.Fprintf(&b, "  %s --> %s\n", id(n), id(m))
		}
	}
	b.WriteString("```\n")
	return b.String()
}

// packagesGraph is the generated block of docs/architecture.md.
func packagesGraph(root string) (string, error) {
	g, files, err := importGraph(root)
	if err != nil {
		return "", err
	}
	r := reduce(g)
	return mermaid(r, files) + fmt.Sprintf("\n%d packages (each with its number of non-test Go files), %d imports between them, %d arrows: an import a longer path implies is not drawn.\n", len(g), countEdges(g), countEdges(r)), nil
}

func countEdges(g map[string][]string) int {
	n := 0
	for _, s := range g {
		n += len(s)
	}
	return n
}

// printImports is -imports DIR: the graph of another checkout, on stdout.
func printImports(dir string) int {
	s, err := packagesGraph(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "docgen:", err)
		return 254
	}
	fmt.Print(s)
	return 0
}
