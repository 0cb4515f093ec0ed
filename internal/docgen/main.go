// Command docgen writes the parts of the docs that are lists of what the
// catalogs hold: the faults (docs/faults.md, the whole page), the scenarios
// (docs/run.md), the recipes (docs/recipes.md) and the deployments with what
// runs on each (docs/deployments.md); and the results site, each committed
// sweep's index.html from its sweep.json and results/index.html (site.go). Each list sits between two marker
// comments in its page; the prose around it is written by hand. `make docs`
// runs it with -w; its test fails when a page differs from what the catalogs
// say, so a fault, recipe, scenario or deployment added or renamed cannot
// leave a page behind.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lockjepsen/lockjepsen/cluster"
	"github.com/lockjepsen/lockjepsen/lock"
	"github.com/lockjepsen/lockjepsen/marks"
	"github.com/lockjepsen/lockjepsen/nemesis"
	"github.com/lockjepsen/lockjepsen/scenario"
)

// block is one generated list: the page it lives in and its content.
type block struct {
	page, name string
	render     func() string
	// renderAt, when set, renders from the tree at root instead.
	renderAt func(root string) (string, error)
}

var blocks = []block{
	{page: "docs/faults.md", name: "targets", render: targetsTable},
	{page: "docs/faults.md", name: "faults", render: faultsTable},
	{page: "docs/run.md", name: "scenarios", render: scenariosTable},
	{page: "docs/recipes.md", name: "recipes", render: recipesTable},
	{page: "docs/deployments.md", name: "deployments", render: deploymentsTable},
	{page: "docs/architecture.md", name: "packages", renderAt: packagesGraph},
}

func begin(name string) string {
	return "<!-- generated: " + name + " (make docs writes what follows from the catalogs; edit the catalog, not this list) -->\n"
}

func end(name string) string { return "<!-- end generated: " + name + " -->\n" }

// fill replaces the text between b's markers in page with its rendering; the
// error names the marker a page lacks.
func fill(page []byte, b block, root string) ([]byte, error) {
	bg, en := []byte(begin(b.name)), []byte(end(b.name))
	i := bytes.Index(page, bg)
	j := bytes.Index(page, en)
	if i < 0 || j < i {
		return nil, fmt.Errorf("%s has no %q ... %q markers: put them where the %s list goes", b.page, strings.TrimSpace(begin(b.name)), strings.TrimSpace(end(b.name)), b.name)
	}
	text := ""
	if b.renderAt != nil {
		var err error
		if text, err = b.renderAt(root); err != nil {
			return nil, err
		}
	} else {
		text = b.render()
	}
	var out bytes.Buffer
	out.Write(page[:i+len(bg)])
	out.WriteString(text)
	out.Write(page[j:])
	return out.Bytes(), nil
}

// generate returns every page with its lists filled in, keyed by its path
// under root.
func generate(root string) (map[string][]byte, error) {
	pages := map[string][]byte{}
	for _, b := range blocks {
		p, ok := pages[b.page]
		if !ok {
			var err error
			if p, err = os.ReadFile(filepath.Join(root, b.page)); err != nil {
				return nil, fmt.Errorf("read %s: %w", b.page, err)
			}
		}
		p, err := fill(p, b, root)
		if err != nil {
			return nil, err
		}
		pages[b.page] = p
	}
	sp, reports, err := sweepPages(root)
	if err != nil {
		return nil, err
	}
	for k, v := range sp {
		pages[k] = v
	}
	site, err := sitePage(root, reports)
	if err != nil {
		return nil, err
	}
	pages[filepath.Join("results", "index.html")] = site
	return pages, nil
}

func main() {
	write := flag.Bool("w", false, "write the pages (default: list the stale ones and exit 1)")
	root := flag.String("root", ".", "the repository's root")
	imports := flag.String("imports", "", "print the package graph of the checkout in this folder (e.g. an older commit's) and exit")
	flag.Parse()
	if *imports != "" {
		os.Exit(printImports(*imports))
	}
	pages, err := generate(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "docgen:", err)
		os.Exit(254)
	}
	stale := 0
	for _, page := range sortedKeys(pages) {
		p := pages[page]
		path := filepath.Join(*root, page)
		old, _ := os.ReadFile(path)
		if bytes.Equal(old, p) {
			continue
		}
		stale++
		if !*write {
			fmt.Printf("%s is stale: run make docs\n", page)
			continue
		}
		if err := os.WriteFile(path, p, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "docgen:", err)
			os.Exit(1)
		}
		fmt.Printf("wrote %s\n", page)
	}
	if stale > 0 && !*write {
		os.Exit(1)
	}
}

// cell escapes what would break a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func code(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "`" + n + "`"
	}
	return strings.Join(out, ", ")
}

// faultConfig is the most a run on deployment d can offer a fault: the
// runtime it asks for, every replica it may promote, a memory limit and the
// proxies. What a fault is refused even then is what the deployment lacks.
func faultConfig(d string, f *nemesis.Fault) cluster.Config {
	rt := f.Needs.Runtime
	if rt == "" {
		rt = cluster.RuntimeLocal
	}
	return cluster.Config{Topology: d, Runtime: rt, Replicas: max(f.Needs.Replicas, 2), MaxMemory: 1 << 24, NetProxy: true}
}

// faultDeployments lists the deployments a fault can be injected on.
func faultDeployments(f *nemesis.Fault) []string {
	var on []string
	// What a fault needs of a deployment's own options (Needs.Config) is a
	// flag of the run, said in the needs column, not a deployment it lacks.
	g := *f
	g.Needs.Config = nil
	for _, d := range cluster.Topologies {
		if g.Available(faultConfig(d, f)) == nil {
			on = append(on, d)
		}
	}
	return on
}

// faultNeeds is what a run must ask for besides its deployment.
func faultNeeds(f *nemesis.Fault) string {
	var n []string
	if f.Needs.Runtime != "" {
		n = append(n, "`--runtime "+f.Needs.Runtime+"`")
	}
	if f.Needs.Replicas > 0 {
		n = append(n, fmt.Sprintf("`--replicas` ≥ %d", f.Needs.Replicas))
	}
	if f.Needs.MaxMemory {
		n = append(n, "`--maxmemory`")
	}
	if f.Needs.NetProxy {
		n = append(n, "`--net-proxy`")
	}
	if f.Needs.FakeTime {
		n = append(n, "libfaketime on the nodes (set by the run)")
	}
	if f.Needs.Config != nil {
		if err := f.Needs.Config(cluster.Config{}); err != nil {
			n = append(n, "it "+err.Error())
		}
	}
	if len(n) == 0 {
		return ""
	}
	return strings.Join(n, ", ")
}

// targetsTable is each fault over a target with the entry it runs on each
// deployment: one row per target, one column per deployment.
func targetsTable() string {
	var b strings.Builder
	b.WriteString("| fault | what it does |")
	for _, d := range cluster.Topologies {
		b.WriteString(" `" + d + "` |")
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(cluster.Topologies)) + "\n")
	for _, t := range nemesis.Targets {
		fmt.Fprintf(&b, "| `%s` | %s |", t.Name, cell(t.Doc))
		for _, d := range cluster.Topologies {
			r, err := nemesis.Resolve(t.Name, d)
			switch f, _ := nemesis.Lookup(r); {
			case err != nil:
				b.WriteString(" |")
			case !slices.Contains(faultDeployments(f), d):
				fmt.Fprintf(&b, " `%s` (refused) |", r)
			default:
				fmt.Fprintf(&b, " `%s` |", r)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

func faultsTable() string {
	var b strings.Builder
	b.WriteString("| fault | what it does | deployments | needs | counts as | its window is exercised with | a violation in it is blamed on |\n|---|---|---|---|---|---|---|\n")
	for _, name := range nemesis.Names() {
		f, _ := nemesis.Lookup(name)
		counts := "an injection"
		switch {
		case f.Failover:
			counts = "a failover"
		case f.MovesPrimary:
			counts = "a slot move"
		}
		var causes []string
		for _, m := range f.Marks {
			if m.Cause != "" && !slices.Contains(causes, m.Cause) {
				causes = append(causes, m.Cause)
			}
		}
		moment := "a lease alive when it begins"
		if len(f.Marks) > 0 {
			switch f.Marks[0].MomentOf() {
			case marks.MomentGrant:
				moment = "a grant inside it"
			case marks.MomentReply:
				moment = "a call it reaches in flight"
			}
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s |\n", f.Name, cell(f.Doc), code(faultDeployments(f)), faultNeeds(f), counts, moment, code(causes))
	}
	return b.String()
}

func scenariosTable() string {
	var b strings.Builder
	b.WriteString("| scenario | deployment | faults | needs | what it teaches | expected verdict |\n|---|---|---|---|---|---|\n")
	for _, name := range scenario.Names() {
		s, _ := scenario.Get(name)
		topo := s.Topology
		if topo == "" {
			topo = cluster.DefaultTopology()
		}
		var needs []string
		if s.Runtime != "" {
			needs = append(needs, "`--runtime "+s.Runtime+"`")
		}
		if s.NetProxy {
			needs = append(needs, "`--net-proxy` (set)")
		}
		if s.MaxMemory > 0 {
			needs = append(needs, fmt.Sprintf("`--maxmemory %d --maxmemory-policy %s` (set)", s.MaxMemory, s.MaxMemoryPolicy))
		}
		if s.OldReplica {
			needs = append(needs, "`--mixed-versions` (set; `make setup-builds`)")
		}
		if s.Recipe != "" {
			needs = append(needs, "`--recipe "+s.Recipe+"` (set)")
		}
		faults := code(s.Faults)
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s | %s | %s |\n", name, topo, faults, strings.Join(needs, ", "), cell(s.Teaches), cell(s.Expect))
	}
	return b.String()
}

// recipeNeeds is what a server must have for the recipe: what it reports
// missing on a server that has nothing.
func recipeNeeds(r lock.Recipe) string {
	if r.Lacks == nil {
		return ""
	}
	return cell(strings.Join(r.Lacks(lock.Caps{}), "; "))
}

func recipesTable() string {
	var b strings.Builder
	b.WriteString("| recipe | what it is | runs on `--topology` | lockjepsen's fence and `WAIT` around it | needs of a Valkey server |\n|---|---|---|---|---|\n")
	for _, r := range lock.Recipes() {
		var on []string
		for _, d := range cluster.Topologies {
			dep, _ := cluster.Lookup(d)
			if r.RunsOn(dep) {
				on = append(on, d)
			}
		}
		wrap := "no: a library's own commands, on its own connections"
		if r.Ours {
			wrap = "yes"
		}
		name := r.Name
		if name == lock.Exec {
			name = lock.Exec + ":PATH"
			wrap = "its own fence, if it returns one ([protocol.md](protocol.md))"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", name, cell(r.Summary), code(on), wrap, recipeNeeds(r))
	}
	return b.String()
}

func deploymentsTable() string {
	var b strings.Builder
	b.WriteString("| `--topology` | what it is | recipes | faults of its own | faults on clients and the resource | scenarios |\n|---|---|---|---|---|---|\n")
	for _, d := range cluster.Topologies {
		dep, _ := cluster.Lookup(d)
		var recipes, own, shared, scens []string
		for _, r := range lock.Recipes() {
			if r.RunsOn(dep) {
				n := r.Name
				if n == lock.Exec {
					n += ":PATH"
				}
				recipes = append(recipes, n)
			}
		}
		for _, name := range nemesis.Names() {
			f, _ := nemesis.Lookup(name)
			if f.Available(faultConfig(d, f)) != nil {
				continue
			}
			if len(faultDeployments(f)) == len(cluster.Topologies) {
				shared = append(shared, name)
			} else {
				own = append(own, name)
			}
		}
		for _, name := range scenario.Names() {
			s, _ := scenario.Get(name)
			if s.Topology == d || s.Topology == "" && d == cluster.DefaultTopology() {
				scens = append(scens, name)
			}
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s |\n", d, cell(dep.Doc()), code(recipes), code(own), code(shared), code(scens))
	}
	return b.String()
}
