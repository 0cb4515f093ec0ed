// Command formmetrics prints the figures the one-home-per-axis work is
// judged by, on the tree it runs in: for each deployment, the non-test Go
// files (and folders) that name it; the largest non-test files; the longest
// functions. Run from the repository's root: go run ./scripts/formmetrics
// (-v lists the files that name a deployment outside its home).
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// The deployments, the word a file names each by, and its home: the
// folder and recipe files it is allowed to fill.
var deployments = []struct {
	name, re string
	home     []string
}{
	// Sentinel's client file is how a client reaches the primary it watches,
	// as Valkey Cluster's is its cluster client's option.
	{"sentinel", `(?i)sentinel`, []string{"deployments/sentinel/", "lock/sentinel.go"}},
	{"standalone", `(?i)standalone`, []string{"deployments/standalone/"}},
	{"redlock", `(?i)redlock`, []string{"deployments/redlock/", "lock/redlock.go"}},
	// Not the word "cluster" alone: the run's node group (config.json's
	// "cluster", the run folder's cluster/, `lockjepsen cluster`) is named so
	// on every deployment; the deployment's own name is its Topology there.
	{"valkey cluster", `(?i)vcluster|valkeycluster|topologycluster|valkey cluster`, []string{"deployments/valkeycluster/", "lock/cluster.go"}},
	{"etcd", `(?i)etcd`, []string{"deployments/etcd/", "lock/etcdmutex.go", "lock/conformance_etcd.go"}},
	{"zookeeper", `(?i)zookeeper|\bzk`, []string{"deployments/zookeeper/", "lock/zklock.go", "lock/conformance_zk.go"}},
	{"sql-lease", `(?i)sql-?lease`, []string{"lock/sqllease.go"}},
	// PostgreSQL by what only its deployment names: "postgres" alone is the
	// fenced resource's database too, and a "connection pooler" is a general idea.
	{"postgres", `(?i)pgbouncer|pg-advisory|pgadvisory|topology postgres|deployments/postgres|--pooler|pooler=`,
		[]string{"deployments/postgres/", "lock/pgadvisory.go", "lock/conformance_pg.go"}},
}

// at reports whether path is one of home's files or under one of its folders.
func at(path string, home []string) bool {
	for _, h := range home {
		if path == h || strings.HasSuffix(h, "/") && strings.HasPrefix(path, h) {
			return true
		}
	}
	return false
}

type file struct {
	path  string
	lines int
	text  string
	code  string // text with its comments blanked: identifiers, strings, imports
	names string // code with its string literals blanked too, but for import paths
}

type fn struct {
	name  string
	lines int
}

func main() {
	var files []file
	var fns []fn
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		// This script names every deployment by design: it is the counter,
		// not a place a deployment spreads to.
		if d.IsDir() && (p == "results" || p == "scripts/formmetrics" || strings.HasPrefix(d.Name(), ".")) && p != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, p, b, parser.ParseComments)
		if err != nil {
			return fmt.Errorf("parse %s: %w", p, err)
		}
		code := []byte(string(b))
		for _, g := range f.Comments {
			for i := fset.Position(g.Pos()).Offset; i < fset.Position(g.End()).Offset; i++ {
				if code[i] != '\n' {
					code[i] = ' '
				}
			}
		}
		names := []byte(string(code))
		imports := map[*ast.BasicLit]bool{}
		for _, im := range f.Imports {
			imports[im.Path] = true
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if l, ok := n.(*ast.BasicLit); ok && l.Kind == token.STRING && !imports[l] {
				for i := fset.Position(l.Pos()).Offset; i < fset.Position(l.End()).Offset; i++ {
					if names[i] != '\n' {
						names[i] = ' '
					}
				}
			}
			return true
		})
		files = append(files, file{p, strings.Count(string(b), "\n"), string(b), string(code), string(names)})
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
				name := fd.Name.Name
				if fd.Recv != nil && len(fd.Recv.List) > 0 {
					name = recv(fd.Recv.List[0].Type) + "." + name
				}
				fns = append(fns, fn{filepath.Dir(p) + ": " + name, n})
			}
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "formmetrics:", err)
		os.Exit(1)
	}
	fmt.Printf("non-test Go files: %d\n\n", len(files))
	// "in code" leaves out the files that name it in comments only: what
	// a change to the deployment could have to touch, not what explains by it.
	// "in names" leaves out its strings too (but for imports): the files
	// whose identifiers or imports depend on the deployment, where adding or
	// changing one costs an edit, apart from the prose that tells a reader
	// of it (a scenario's lesson, a fault's doc, a workshop's question).
	fmt.Println("deployment        files naming it  folders  outside its home  in code  in names")
	var away []string
	for _, d := range deployments {
		re := regexp.MustCompile(d.re)
		dirs := map[string]bool{}
		n, out, inCode, inNames := 0, 0, 0, 0
		for _, f := range files {
			if re.MatchString(f.text) {
				n++
				dirs[filepath.Dir(f.path)] = true
				if !at(f.path, d.home) {
					out++
					where := "comments"
					if re.MatchString(f.code) {
						inCode++
						where = "code"
					}
					if re.MatchString(f.names) {
						inNames++
						where = "names"
					}
					away = append(away, d.name+": "+f.path+" ("+where+")")
				}
			}
		}
		fmt.Printf("%-17s %15d  %7d  %16d  %7d  %8d\n", d.name, n, len(dirs), out, inCode, inNames)
	}
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println("\nfiles naming a deployment outside its home")
		for _, a := range away {
			fmt.Println("  " + a)
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].lines > files[j].lines })
	fmt.Println("\nlargest non-test files (lines)")
	for _, f := range files[:min(5, len(files))] {
		fmt.Printf("%6d  %s\n", f.lines, f.path)
	}
	sort.Slice(fns, func(i, j int) bool { return fns[i].lines > fns[j].lines })
	fmt.Println("\nlongest functions (lines)")
	for _, f := range fns[:min(5, len(fns))] {
		fmt.Printf("%6d  %s\n", f.lines, f.name)
	}
}

func recv(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recv(t.X)
	case *ast.Ident:
		return t.Name
	case *ast.IndexExpr:
		return recv(t.X)
	}
	return "?"
}
