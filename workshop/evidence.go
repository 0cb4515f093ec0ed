package workshop

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/lockjepsen/lockjepsen/checker"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/runfolder"
)

// Evidence is what a step left on disk, read back the way an attendee would
// read it: results.json first, the history for what results.json does not
// count (why acquires failed), transcript.json for the by-hand labs.
type Evidence struct {
	Dir        string
	Result     *checker.Result // KindRun
	Transcript *Transcript     // KindScript

	// From history.jsonl: failed acquires by reason.
	WaitShort  int // WAIT/WAITAOF acknowledged fewer replicas than asked: lock released
	NoReplicas int // -NOREPLICAS: min-replicas-to-write refused the SET
	AcquireOK  int
	Events     int // every event of history.jsonl (a shrunk run's size)

	// Others holds the evidence of the other labs' steps by step name
	// (KindReport only).
	Others map[string]*Evidence
}

// TranscriptFile is a by-hand lab's record; a run step's claims read the
// run folder's runfolder.Results.
const TranscriptFile = "transcript.json"

// Load reads a step's folder.
func Load(s Step, dir string) (*Evidence, error) {
	ev := &Evidence{Dir: dir}
	switch s.Kind {
	case KindRun, KindShrink:
		ev.Result = &checker.Result{}
		if err := runfolder.ReadJSON(filepath.Join(dir, runfolder.Results), ev.Result); err != nil {
			return nil, fmt.Errorf("read the run's verdicts: %w", err)
		}
		events, err := history.ReadFile(filepath.Join(dir, runfolder.History))
		if err != nil {
			return nil, fmt.Errorf("read the run's history: %w", err)
		}
		ev.Events = len(events)
		for _, e := range events {
			if e.F != "acquire" || !e.IsClient() {
				continue
			}
			switch {
			case e.Type == history.OK:
				ev.AcquireOK++
			case e.Type == history.Fail && strings.Contains(e.Error, "replica(s) acknowledged"):
				ev.WaitShort++
			case e.Type == history.Fail && strings.Contains(e.Error, "NOREPLICAS"):
				ev.NoReplicas++
			}
		}
	case KindScript:
		t, err := ReadTranscript(filepath.Join(dir, TranscriptFile))
		if err != nil {
			return nil, err
		}
		ev.Transcript = t
	case KindReport:
		ev.Others = map[string]*Evidence{}
		for _, l := range Labs() {
			for _, o := range l.Steps {
				if o.Kind == KindReport {
					continue
				}
				if oe, err := Load(o, filepath.Join(filepath.Dir(dir), o.Name)); err == nil {
					ev.Others[o.Name] = oe
				}
			}
		}
	}
	return ev, nil
}

// Transcript is a by-hand lab's record: every command sent and the reply
// valkey-cli printed, plus the figures the script measured.
type Transcript struct {
	Lines   []Exchange         `json:"lines"`
	Figures map[string]float64 `json:"figures"`
}

// Exchange is one command and its reply; ID names it for the claims.
type Exchange struct {
	ID      string  `json:"id,omitempty"`
	Note    string  `json:"note,omitempty"` // a comment line printed before the command
	Command string  `json:"command,omitempty"`
	Reply   string  `json:"reply,omitempty"`
	AtS     float64 `json:"at_s"` // seconds since the script started
}

// Reply returns the reply of the exchange with id ("" and false if none).
func (t *Transcript) Reply(id string) (string, bool) {
	for _, l := range t.Lines {
		if l.ID == id {
			return l.Reply, true
		}
	}
	return "", false
}

// ReadTranscript loads transcript.json.
func ReadTranscript(path string) (*Transcript, error) {
	var t Transcript
	if err := runfolder.ReadJSON(path, &t); err != nil {
		return nil, fmt.Errorf("read the lab's transcript: %w", err)
	}
	return &t, nil
}

func (t *Transcript) write(path string) error {
	return runfolder.WriteJSON(path, t)
}

// errNoEvidence is returned by checks on a step that produced nothing.
var errNoEvidence = errors.New("no evidence")
