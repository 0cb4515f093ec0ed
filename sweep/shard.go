package sweep

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"github.com/lockjepsen/lockjepsen/runfolder"
)

// ParseShard reads --shard: "I/N", or "/N" (or "N") with I taken from env,
// the JOB_COMPLETION_INDEX a Kubernetes Indexed Job gives each pod. An I/N
// given in full wins over the environment.
func ParseShard(s, env string) (Shard, error) {
	i, n, ok := strings.Cut(s, "/")
	if !ok {
		i, n = "", s
	}
	// Where the index came from, for the message: a pod's bad
	// JOB_COMPLETION_INDEX is named as such, not as the --shard typed.
	from := ""
	if i == "" {
		if env == "" {
			return Shard{}, fmt.Errorf("%q: no shard index (give I/N, or run where JOB_COMPLETION_INDEX is set)", s)
		}
		i, from = env, " from JOB_COMPLETION_INDEX"
	}
	idx, err1 := strconv.Atoi(strings.TrimSpace(i))
	cnt, err2 := strconv.Atoi(strings.TrimSpace(n))
	if err1 != nil || err2 != nil || cnt < 1 || idx < 0 || idx >= cnt {
		return Shard{}, fmt.Errorf("%q (index %q%s): want I/N with 0 <= I < N", s, i, from)
	}
	return Shard{Index: idx, Count: cnt}, nil
}

// Merge builds one sweep in out from shard folders: their plans must be equal
// but for the shard (same matrix, seeds, trial counts and stopping rule), the
// shards distinct and of the same count, and no trial may appear in two of
// them. Trial folders are hard-linked (copied across file systems) into
// out/trials; plan.json is the unsharded plan; then the sweep is aggregated
// and published as usual. Missing shards are allowed (their trials count as
// pending) so that a partial result can be looked at.
func Merge(out string, dirs []string) (*Report, error) { return MergeOn(out, dirs, 0) }

// MergeOn is Merge for shards that ran side by side on one machine with
// hostParallel trials at once in all (Plan.HostParallel); 0 when each shard
// had a machine of its own (a Kubernetes pod), where its own --parallel is
// the load its trials saw.
func MergeOn(out string, dirs []string, hostParallel int) (*Report, error) {
	if len(dirs) == 0 {
		return nil, errors.New("merge: no shard folders given")
	}
	var plan Plan
	seen := map[int]string{}
	for i, d := range dirs {
		p, err := ReadPlan(d)
		if err != nil {
			return nil, err
		}
		if p.Shard == nil {
			return nil, fmt.Errorf("merge: %s is not a shard (its plan.json has no shard): nothing to merge", d)
		}
		if i == 0 {
			plan = p
		} else if !reflect.DeepEqual(p.Unsharded(), plan.Unsharded()) {
			return nil, fmt.Errorf("merge: %s and %s hold different plans (matrix, seeds, trial counts or stopping rule differ): they are not shards of one sweep", dirs[0], d)
		}
		if p.Shard.Count != plan.Shard.Count {
			return nil, fmt.Errorf("merge: %s is shard %d/%d but %s is of %d shards", d, p.Shard.Index, p.Shard.Count, dirs[0], plan.Shard.Count)
		}
		if prev, dup := seen[p.Shard.Index]; dup {
			return nil, fmt.Errorf("merge: %s and %s are both shard %d/%d: they overlap", prev, d, p.Shard.Index, p.Shard.Count)
		}
		seen[p.Shard.Index] = d
	}
	if _, err := os.Stat(filepath.Join(out, PlanFile)); err == nil {
		return nil, fmt.Errorf("merge: %s already holds a sweep; choose another --out", out)
	}
	// Every trial once, and only from the shard that owns it.
	from := map[string]string{}
	for _, d := range dirs {
		p, _ := ReadPlan(d)
		for ci, c := range p.Cells() {
			tds, err := TrialDirs(d, c)
			if err != nil {
				return nil, err
			}
			for _, td := range tds {
				n, _ := strconv.Atoi(filepath.Base(td))
				key := c.ID() + "/" + strconv.Itoa(n)
				if prev, dup := from[key]; dup {
					return nil, fmt.Errorf("merge: trial %s is in both %s and %s", key, prev, d)
				}
				if !p.Owns(ci, n) {
					return nil, fmt.Errorf("merge: %s holds trial %s, which shard %d/%d does not own: not a shard folder of this sweep", d, key, p.Shard.Index, p.Shard.Count)
				}
				from[key] = td
			}
		}
	}
	merged := plan.Unsharded()
	merged.HostParallel = hostParallel
	if err := Start(out, merged); err != nil {
		return nil, err
	}
	for key, td := range from {
		if err := copyTree(td, filepath.Join(out, Trials, key)); err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
	}
	// Each cell's evidence, kept by whichever shard ran a violating trial
	// of it first (in the order the shards are given).
	for _, d := range dirs {
		evs, _ := os.ReadDir(filepath.Join(d, Evidence))
		for _, e := range evs {
			src, dst := filepath.Join(d, Evidence, e.Name()), EvidenceDir(out, e.Name())
			if _, err := os.Stat(filepath.Join(src, runfolder.Index)); err != nil || !e.IsDir() {
				continue
			}
			if _, err := os.Stat(dst); err == nil {
				continue
			}
			if err := copyTree(src, dst); err != nil {
				return nil, fmt.Errorf("merge: %w", err)
			}
		}
	}
	rep, err := Aggregate(out)
	if err != nil {
		return nil, err
	}
	return rep, Publish(out, rep)
}

// copyTree hard-links (or copies) every regular file of src into dst.
func copyTree(src, dst string) error {
	return filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		t := filepath.Join(dst, rel)
		switch {
		case fi.IsDir():
			return os.MkdirAll(t, 0o755)
		case !fi.Mode().IsRegular():
			return nil // sockets, links: a run folder's are not results
		}
		if os.Link(p, t) == nil {
			return nil
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		o, err := os.OpenFile(t, os.O_CREATE|os.O_EXCL|os.O_WRONLY, fi.Mode().Perm())
		if err != nil {
			return err
		}
		if _, err := io.Copy(o, in); err != nil {
			o.Close()
			return err
		}
		return o.Close()
	})
}

// Shard is one of Count shards of a sweep.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// ShardIndex is the index that decides a trial's shard: trial n of the cell
// at position ci of Cells has index ci + n, and shard I of N runs the trials
// whose index is ≡ I mod N. Each cell's trials are so dealt round-robin to
// the shards, starting one shard further for each cell: every shard runs
// every cell (which the per-shard stopping rule needs), the shards' loads
// differ by at most one trial per cell, and the owner of a trial does not
// depend on --trials or --max-trials, which a resume may change. (A plain
// position in Jobs would pin each cell to one shard whenever the shard count
// divides the cell count.)
func ShardIndex(ci, n int) int { return ci + n }

// Owns reports whether this plan's shard runs trial n of the cell with
// index ci in Cells (every trial without a shard).
func (p Plan) Owns(ci, n int) bool {
	if p.Shard == nil || p.Shard.Count <= 1 {
		return true
	}
	return ShardIndex(ci, n)%p.Shard.Count == p.Shard.Index
}

// Owned is how many of the cell's fixed trials (n < Trials) this plan's
// shard runs.
func (p Plan) Owned(ci int) int {
	k := 0
	for n := 0; n < p.Trials; n++ {
		if p.Owns(ci, n) {
			k++
		}
	}
	return k
}

// Unsharded is the plan without its shard: what every shard of one sweep
// shares, and the plan of a merged sweep.
func (p Plan) Unsharded() Plan {
	p.Shard = nil
	return p
}
