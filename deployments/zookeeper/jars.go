package zookeeper

import (
	"archive/zip"
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// ZooKeeperJars is every jar a ZooKeeper classpath loads from: its entries
// and, transitively, the jars their manifests' Class-Path names, as the JVM
// follows them (Debian's zookeeper.jar names 23; jackson-databind.jar names
// two of those again). The docker image holds exactly these, at the same
// paths, since the manifests name absolute paths. A Class-Path entry that
// does not exist is skipped, as the JVM skips it.
func ZooKeeperJars(classpath string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	var walk func(jar string, named bool) error
	walk = func(jar string, named bool) error {
		if seen[jar] {
			return nil
		}
		if _, err := os.Stat(jar); err != nil {
			if named {
				return nil
			}
			return fmt.Errorf("classpath entry %s: %w", jar, err)
		}
		seen[jar] = true
		out = append(out, jar)
		refs, err := manifestClassPath(jar)
		if err != nil {
			return err
		}
		for _, r := range refs {
			if !filepath.IsAbs(r) {
				r = filepath.Join(filepath.Dir(jar), r)
			}
			if err := walk(r, true); err != nil {
				return err
			}
		}
		return nil
	}
	for _, e := range strings.Split(classpath, ":") {
		if e == "" {
			continue
		}
		if err := walk(e, false); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// manifestClassPath reads a jar's META-INF/MANIFEST.MF Class-Path: entries
// separated by spaces, the header continued on lines that begin with one
// space (the manifest format wraps at 72 bytes).
func manifestClassPath(jar string) ([]string, error) {
	z, err := zip.OpenReader(jar)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", jar, err)
	}
	defer z.Close()
	f, err := z.Open("META-INF/MANIFEST.MF")
	if err != nil {
		return nil, nil // a jar without a manifest names nothing
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read %s's manifest: %w", jar, err)
	}
	var value strings.Builder
	in := false
	sc := bufio.NewScanner(strings.NewReader(strings.ReplaceAll(string(b), "\r\n", "\n")))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case in && strings.HasPrefix(line, " "):
			value.WriteString(line[1:])
		case strings.HasPrefix(line, "Class-Path:"):
			in = true
			value.WriteString(strings.TrimPrefix(line, "Class-Path:"))
		default:
			in = false
		}
	}
	return strings.Fields(value.String()), nil
}
