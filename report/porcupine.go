package report

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/anishathalye/porcupine"
	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/runfolder"
)

// DrawPorcupine writes porcupine's page for every picture the checker
// gathered into dir, lists them in res.Visualizations and links each
// violation to the page of its partition.
func DrawPorcupine(dir string, res *checker.Result) error {
	if len(res.Pictures) == 0 {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	used := make(map[string]bool)
	pages := make(map[[2]string]string)
	for _, p := range res.Pictures {
		kind := runfolder.PageLock
		if p.Affects == "resource" {
			kind = runfolder.PageResource
		}
		name := runfolder.PorcupinePage(kind, p.Key)
		for i := 2; used[name]; i++ {
			name = runfolder.PorcupinePage(kind, fmt.Sprintf("%s-%d", p.Key, i))
		}
		used[name] = true
		path := filepath.Join(dir, name)
		info := p.Info
		info.AddAnnotations(p.Annotations)
		if err := porcupine.VisualizePath(p.Model, info, path); err != nil {
			return fmt.Errorf("draw %s: %w", path, err)
		}
		res.Visualizations = append(res.Visualizations, name)
		pages[[2]string{p.Affects, p.Key}] = name
	}
	for i := range res.Violations {
		v := &res.Violations[i]
		if name, ok := pages[[2]string{v.Affects, v.Key}]; ok {
			v.Picture = name
		}
	}
	return nil
}
