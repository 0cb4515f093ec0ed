package runfolder

import (
	"fmt"
	"os"
	"path/filepath"
)

// InRoot reports whether dir is directly inside the results root: its parent
// folder is root (compared as absolute, symlink-resolved paths).
func InRoot(root, dir string) bool {
	parent, err1 := resolve(filepath.Dir(filepath.Clean(dir)))
	r, err2 := resolve(root)
	return err1 == nil && err2 == nil && parent == r
}

func resolve(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real, nil
	}
	return abs, nil
}

// UpdateLatest points root/latest at dir (a relative symlink, so the results
// folder can be moved), replacing an older link atomically. It does so only
// when dir is directly inside root (InRoot): a run given --out elsewhere, a
// sweep's trial or a workshop step is not "the newest run" of the results
// folder, and UpdateLatest then does nothing and returns nil. An existing
// root/latest that is not a symlink is never replaced.
func UpdateLatest(root, dir string) error {
	if !InRoot(root, dir) {
		return nil
	}
	link := filepath.Join(root, Latest)
	if st, err := os.Lstat(link); err == nil && st.Mode()&os.ModeSymlink == 0 {
		return fmt.Errorf("%s exists and is not a link: leaving it alone", link)
	}
	tmp := filepath.Join(root, "."+Latest+".tmp")
	_ = os.Remove(tmp)
	if err := os.Symlink(filepath.Base(filepath.Clean(dir)), tmp); err != nil {
		return fmt.Errorf("link %s: %w", link, err)
	}
	if err := os.Rename(tmp, link); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("link %s: %w", link, err)
	}
	return nil
}
