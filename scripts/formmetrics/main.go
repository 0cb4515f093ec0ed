// Command formmetrics prints the figures the one-home-per-axis work is
// judged by, on the tree it runs in: for each deployment, the non-test Go
// files (and folders) that name it; the largest non-test files; the longest
// functions. Run from the repository's root: go run ./scripts/formmetrics
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

// The deployments and the word a file names each by.
var deployments = []struct{ name, re string }{
	{"sentinel", `(?i)sentinel`},
	{"standalone", `(?i)standalone`},
	{"redlock", `(?i)redlock`},
	{"valkey cluster", `(?i)vcluster|topologycluster|valkey cluster|"cluster"`},
	{"etcd", `(?i)etcd`},
	{"zookeeper", `(?i)zookeeper|\bzk`},
	{"sql-lease", `(?i)sql-?lease`},
	// PostgreSQL by what only its deployment names: "postgres" alone is the
	// fenced resource's database too, and a "connection pooler" is a general idea.
	{"postgres", `(?i)pgbouncer|pg-advisory|pgadvisory|topology postgres|deployments/postgres|--pooler|pooler=`},
}

type file struct {
	path  string
	lines int
	text  string
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
		files = append(files, file{p, strings.Count(string(b), "\n"), string(b)})
		f, err := parser.ParseFile(fset, p, b, 0)
		if err != nil {
			return fmt.Errorf("parse %s: %w", p, err)
		}
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
	fmt.Println("deployment        files naming it  folders")
	for _, d := range deployments {
		re := regexp.MustCompile(d.re)
		dirs := map[string]bool{}
		n := 0
		for _, f := range files {
			if re.MatchString(f.text) {
				n++
				dirs[filepath.Dir(f.path)] = true
			}
		}
		fmt.Printf("%-17s %15d  %7d\n", d.name, n, len(dirs))
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
