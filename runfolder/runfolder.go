// Package runfolder owns the run folder: it names every file a run leaves
// (history.jsonl, results.json, the porcupine pages, ...), writes them
// atomically, reads the JSON ones back, and places the results/latest link.
//
// It is a leaf package (standard library only) rather than a part of report/,
// which plays that role in etcd's tests/robustness: here report/ imports
// checker/ to draw a Result, while checker/ needs the porcupine page names, so
// the names must live below both. runner/, sweep/, workshop/, report/, the
// checker and the CLI all spell a run folder's files through this package.
//
// A run folder:
//
//	results/<timestamp>-<scenario>/
//	  index.html  summary.txt  results.json  timeline.png  timeline.svg
//	  porcupine-lock-*.html  porcupine-resource-*.html      (PorcupinePage)
//	  config.json  history.jsonl  nemesis.jsonl  resource.jsonl
//	  resource.db  resource.log  resource.addr
//	  logs/  clients/  cluster/
package runfolder

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// The files and folders of a run folder, relative to it.
const (
	History  = "history.jsonl"  // every client and nemesis event, true time (docs/history.md)
	Nemesis  = "nemesis.jsonl"  // the nemesis events alone
	Resource = "resource.jsonl" // the fenced resource's log of every read and write
	Results  = "results.json"   // the checker's verdicts and figures (docs/checker.md)
	Summary  = "summary.txt"    // what the terminal printed at the end
	RunLog   = "run.log"        // the phase log and the summary, as the terminal showed them (Jepsen's jepsen.log)
	Config   = "config.json"    // every knob, the seed, the fault schedule, versions
	Index    = "index.html"     // start here
	// Shrink is in a folder `lockjepsen shrink` wrote: the run it came
	// from, the violation it keeps and why each unit stayed.
	Shrink = "shrink.json"

	// Timeline is the timeline's base name: report.Save writes TimelinePNG
	// and TimelineSVG.
	Timeline    = "timeline"
	TimelinePNG = Timeline + ".png"
	TimelineSVG = Timeline + ".svg"

	ResourceDB   = "resource.db"   // the embedded SQLite resource
	ResourceLog  = "resource.log"  // the resource service's own output
	ResourceAddr = "resource.addr" // the resource service's address, once it listens

	Logs    = "logs"    // every Valkey and Sentinel log
	Clients = "clients" // every client's diagnostics (ClientLog)
	Cluster = "cluster" // node configs and data
)

// The kinds of porcupine page, the first word of PorcupinePage's name.
const (
	PageLock     = "lock"     // one lock key's partition
	PageResource = "resource" // one resource row's partition
)

// PorcupinePage is the file name of porcupine's picture of one key of the
// given kind (PageLock, PageResource): "porcupine-lock-job-1.html" for the
// lock key "lock:{job-1}", "porcupine-resource-job-1.html" for the row
// "job-1". The key loses its "lock:" prefix and its hash-tag braces (the
// kind already says it is a lock); any other character but letters, digits,
// '_' and '.' becomes '-', and dashes do not double.
func PorcupinePage(kind, key string) string {
	return "porcupine-" + kind + "-" + keySlug(key) + ".html"
}

func keySlug(key string) string {
	key = strings.TrimPrefix(key, "lock:")
	var b strings.Builder
	dash := false
	for _, r := range key {
		switch {
		case r == '{' || r == '}':
			continue
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.':
			b.WriteRune(r)
			dash = false
		default:
			if !dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = true
		}
	}
	s := strings.TrimRight(b.String(), "-")
	if s == "" {
		return "key"
	}
	return s
}

// ClientLog is client slot's diagnostics file, relative to the run folder.
func ClientLog(slot int) string {
	return filepath.Join(Clients, fmt.Sprintf("client-%d.log", slot))
}

// Root is the default results root; Latest is the link inside it that points
// at the newest run.
const (
	Root   = "results"
	Latest = "latest"
)

// NewDir is a fresh folder under root named for its start time and what it
// holds: results/20260102-150405-failover-race.
func NewDir(root string, t time.Time, name string) string {
	return filepath.Join(root, t.Format("20060102-150405")+"-"+name)
}
