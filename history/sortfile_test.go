package history

import (
	"bytes"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// sortedTheOldWay is what the runner wrote before SortFile: ReadFile, every
// index set to its position, WriteFile.
func sortedTheOldWay(t *testing.T, dir string, data []byte) []byte {
	t.Helper()
	path := filepath.Join(dir, "old.jsonl")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ev, err := ReadFile(path)
	if err != nil {
		t.Fatalf("ReadFile: %v", err)
	}
	for i := range ev {
		ev[i].Index = int64(i)
	}
	if err := WriteFile(path, ev); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// arrivalHistory is an arrival-ordered history as the runner's writer
// leaves it: procs processes of acquire/release pairs whose events reach
// the file up to `late` ns after their time (each process's in its order),
// and every `stragglers`th event much later (a client paused between
// stamping an event and writing it).
func arrivalHistory(seed int64, procs, opsEach int, late int64, stragglers int) []byte {
	rng := rand.New(rand.NewSource(seed))
	type arrival struct {
		at int64
		e  Event
	}
	var all []arrival
	n := 0
	for p := 0; p < procs; p++ {
		tm, last := int64(1000+p), int64(0)
		for op := 0; op < opsEach; op++ {
			tok := "t" + strconv.Itoa(p) + "-" + strconv.Itoa(op)
			key := "lock:{job-" + strconv.Itoa(p%4+1) + "}"
			for _, ev := range []Event{
				{Type: Invoke, F: FAcquire, Key: key, Token: tok, TTLMs: 2000},
				{Type: OK, F: FAcquire, Key: key, Token: tok, TTLMs: 2000, Fence: int64(op + 1)},
				{Type: Invoke, F: FRelease, Key: key, Token: tok},
				{Type: Fail, F: FRelease, Key: key, Token: tok, Error: `lock "not held" <&>`},
			} {
				tm += rng.Int63n(3) // ties across processes, and within one
				ev.Time, ev.Process, ev.Client = tm, Process(p), p
				at := tm + rng.Int63n(late+1)
				if n++; stragglers > 0 && n%stragglers == 0 {
					at += 200 * late
				}
				last = max(last, at)
				all = append(all, arrival{last, ev})
			}
		}
	}
	all = append(all, arrival{5, Event{Time: 5, Process: Nemesis, Type: Info, F: "kill", Node: "valkey-1", Detail: strings.Repeat("x", 300)}})
	slices.SortStableFunc(all, func(a, b arrival) int { return int(a.at - b.at) })
	var out []byte
	for i := range all {
		all[i].e.Index = int64(i)
		out = append(AppendJSON(out, &all[i].e), '\n')
	}
	return out
}

func TestSortFileWritesWhatReadFileAndWriteFileWrote(t *testing.T) {
	small := `{"index":0,"time":5,"process":0,"type":"invoke","f":"acquire","key":"k","token":"A","ttl_ms":10}
{"index":1,"time":3,"process":"nemesis","type":"info","f":"kill","node":"valkey-1"}
{"index":2,"time":7,"process":0,"type":"ok","f":"acquire","key":"k","token":"A","ttl_ms":10,"fence":3}
`
	cases := []struct {
		name string
		data string
	}{
		{"out of order", small},
		{"already sorted", `{"index":0,"time":3,"process":"nemesis","type":"info","f":"kill","node":"valkey-1"}
{"index":1,"time":5,"process":0,"type":"invoke","f":"acquire","key":"k","token":"A","ttl_ms":10}
`},
		{"torn last line dropped", small + `{"index":3,"time":8,"process":1,"type":"invoke","f":"rel`},
		{"last line without its newline kept", strings.TrimSuffix(small, "\n")},
		{"blank lines and blanks around a line", "\n" + strings.ReplaceAll(small, "\n", "  \r\n\n")},
		{"ties in time, broken by index", `{"index":1,"time":5,"process":1,"type":"invoke","f":"acquire","key":"k","token":"B","ttl_ms":10}
{"index":0,"time":5,"process":0,"type":"invoke","f":"acquire","key":"k","token":"A","ttl_ms":10}
{"index":2,"time":4,"process":"nemesis","type":"info","f":"kill","node":"valkey-1"}
`},
		{"lines encoding/json decodes (spaces, other field order, escapes, unknown case)", `{ "time": 9, "index": 0, "process": 0, "type": "invoke", "f": "acquire", "key": "k", "token": "A", "ttl_ms": 10 }
{"INDEX":1,"time":2,"process":"nemesis","type":"info","f":"kill","node":"valkey-1","detail":"caf\u00e9 \"x\" \u003c"}
`},
		{"a line longer than the window", `{"index":0,"time":9,"process":"nemesis","type":"info","f":"kill","node":"valkey-1","detail":"` + strings.Repeat("d", 3*sortWindow) + `"}
{"index":1,"time":2,"process":"nemesis","type":"info","f":"kill","node":"valkey-2"}
`},
		{"arrival order, local jitter", string(arrivalHistory(1, 64, 40, 2000, 0))},
		{"arrival order, stragglers far behind", string(arrivalHistory(2, 32, 300, 50_000, 97))},
		{"empty", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			want := sortedTheOldWay(t, dir, []byte(c.data))
			path := filepath.Join(dir, "history.jsonl")
			if err := os.WriteFile(path, []byte(c.data), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := SortFile(path); err != nil {
				t.Fatalf("SortFile: %v", err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("SortFile wrote %d bytes, ReadFile+WriteFile %d; first difference at byte %d",
					len(got), len(want), firstDiff(got, want))
			}
		})
	}
}

// The window really is exercised: a large file with stragglers spans many
// windows, and still comes out as the old way wrote it.
func TestSortFileAcrossWindows(t *testing.T) {
	data := arrivalHistory(3, 64, 400, 20_000, 501)
	if len(data) < 4*sortWindow {
		t.Fatalf("history of %d bytes spans too few windows", len(data))
	}
	dir := t.TempDir()
	want := sortedTheOldWay(t, dir, data)
	path := filepath.Join(dir, "history.jsonl")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := SortFile(path); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, want) {
		t.Fatalf("differs from ReadFile+WriteFile at byte %d", firstDiff(got, want))
	}
}

// A history the reader refuses is left as it was, and the error names its line.
func TestSortFileLeavesARefusedHistory(t *testing.T) {
	cases := []struct{ name, data, want string }{
		{"not JSON", "{\"index\":0,\"time\":5,\"process\":0,\"type\":\"invoke\",\"f\":\"acquire\",\"key\":\"k\",\"token\":\"A\",\"ttl_ms\":10}\nnot json\n", "h.jsonl:2:"},
		{"completion without invoke", `{"index":0,"time":5,"process":0,"type":"ok","f":"acquire","key":"k","token":"A"}` + "\n", "h.jsonl:1:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "h.jsonl")
			if err := os.WriteFile(path, []byte(c.data), 0o644); err != nil {
				t.Fatal(err)
			}
			err := SortFile(path)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want one naming %s", err, c.want)
			}
			if got, _ := os.ReadFile(path); string(got) != c.data {
				t.Fatalf("file changed to %q", got)
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
