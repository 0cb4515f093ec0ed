package checker

import (
	"encoding/json"
	"fmt"
	"github.com/lockjepsen/lockjepsen/history"
	"time"

	"github.com/lockjepsen/lockjepsen/marks"
)

// Validity is a three-valued verdict. It is written to JSON as true, false or
// "unknown", the way Jepsen reports :valid?, so that a script reading
// results.json cannot mistake "no verdict" for "valid".
type Validity int8

const (
	Valid Validity = iota
	Invalid
	Unknown
)

func (v Validity) String() string {
	switch v {
	case Valid:
		return "valid"
	case Invalid:
		return "invalid"
	}
	return "unknown"
}

// MarshalJSON writes true, false or "unknown".
func (v Validity) MarshalJSON() ([]byte, error) {
	switch v {
	case Valid:
		return []byte("true"), nil
	case Invalid:
		return []byte("false"), nil
	}
	return []byte(`"unknown"`), nil
}

// UnmarshalJSON accepts what MarshalJSON writes, so results.json round-trips.
func (v *Validity) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case "true":
		*v = Valid
	case "false":
		*v = Invalid
	case `"unknown"`:
		*v = Unknown
	default:
		return fmt.Errorf("validity must be true, false or \"unknown\", got %s", b)
	}
	return nil
}

// and combines verdicts: any invalid part makes the whole invalid; otherwise any
// unknown part makes it unknown.
func and(vs ...Validity) Validity {
	out := Valid
	for _, v := range vs {
		if v == Invalid {
			return Invalid
		}
		if v == Unknown {
			out = Unknown
		}
	}
	return out
}

// DefaultEpsilon is the one default lease tolerance: `lockjepsen run` records
// it in config.json and `lockjepsen check` uses it when nothing else is given.
// It absorbs Valkey's millisecond expiry granularity and the drift between the
// server's clock and CLOCK_MONOTONIC over one lease (NTP slews by at most
// 500 ppm: 3 ms over a 6 s lease). docs/checker.md states the policy.
const DefaultEpsilon = 5 * time.Millisecond

// DefaultBudget is porcupine's default time per lock key and resource row.
const DefaultBudget = 10 * time.Second

// Options tune the checker. The zero value is usable: Defaults fills it.
type Options struct {
	// Epsilon widens every lease's expiry bounds: a lease granted at call..return
	// with ttl expires in [call+ttl-Epsilon, return+ttl+Epsilon]. It absorbs
	// Valkey's millisecond truncation of PX and clock-rate drift between the
	// server's clock and CLOCK_MONOTONIC.
	Epsilon time.Duration
	// Budget is porcupine's time budget per lock key and per resource row. When
	// it runs out without a verdict the part is "unknown".
	Budget time.Duration
	// Pictures keeps, for every failed partition, what porcupine needs to
	// draw it (Result.Pictures); report.DrawPorcupine writes the pages.
	Pictures bool
	// ChunkOps is the size porcupine segments are grown to before they are cut
	// at a point where the key's state is known; it bounds porcupine's
	// quadratic memory.
	ChunkOps int
	// WindowOps caps the operations drawn in one visualisation.
	WindowOps int
	// Marks is the vocabulary of the history's fault events, handed over by
	// the program that ran the faults (nemesis.Catalog): which event begins a
	// fault, which heals it, what it is blamed on. Without it every fault
	// event reads as no fault at all, and the result warns so.
	Marks *marks.Catalog
}

// Defaults fills unset options.
func (o Options) Defaults() Options {
	if o.Epsilon == 0 {
		o.Epsilon = DefaultEpsilon
	}
	if o.Budget == 0 {
		o.Budget = DefaultBudget
	}
	if o.ChunkOps == 0 {
		o.ChunkOps = 2000
	}
	if o.WindowOps == 0 {
		o.WindowOps = 400
	}
	return o
}

// Result is the checker's verdict, written as results.json. Every field is
// documented in docs/checker.md.
type Result struct {
	Valid    Validity       `json:"valid"`
	Lock     LockResult     `json:"lock"`
	Resource ResourceResult `json:"resource"`
	// Liveness: locks left taken forever (liveness.go).
	Liveness LivenessResult `json:"liveness"`
	// Ownership: grants a client was misinformed about (ownership.go).
	Ownership OwnershipResult `json:"ownership"`

	DoubleHolders    int            `json:"double_holders"`
	DoubleHolderList []DoubleHolder `json:"double_holder_list"`
	ExposureMs       Exposure       `json:"exposure_ms"`
	StaleWrites      StaleWrites    `json:"stale_writes"`
	FenceTokens      FenceTokens    `json:"fence_tokens"`
	Failovers        int            `json:"failovers"`
	// ClosedBySetting counts the nemesis's closed-by-setting observations:
	// a fault that waited for a grant the replication guard refused
	// (NOREPLICAS, a WAIT or WAITAOF short of acknowledgements) while the
	// fault held, and went on without one. The sweep counts them among the
	// fault's opportunities, as ones the setting closed.
	ClosedBySetting int `json:"closed_by_setting,omitempty"`
	// FaultWindows are the faults' intervals with the grants made in each
	// (availability under a fault: a minority partition should not stop them).
	FaultWindows []FaultWindow `json:"fault_windows"`
	// Coverage tallies the windows by fault; NotExercised names the faults
	// none of whose windows reached their moment ("" when every fault did, or
	// there was none): a valid verdict says nothing about those.
	Coverage       []FaultCoverage      `json:"coverage"`
	NotExercised   string               `json:"not_exercised,omitempty"`
	Ops            map[string]*OpCounts `json:"ops"`
	LatencyMs      Latency              `json:"latency_ms"`
	Violations     []Violation          `json:"violations"`
	Visualizations []string             `json:"visualizations"`
	// Pictures are the failed partitions to draw (Options.Pictures); not
	// part of results.json: report.DrawPorcupine turns them into pages and
	// fills Visualizations and each violation's Picture.
	Pictures []Picture `json:"-"`
	// UnknownCommands are operations the server refused as unknown commands
	// (an older node promoted, a build without the command).
	UnknownCommands    []UnknownCommand `json:"unknown_commands"`
	Options            OptionsEcho      `json:"options"`
	StartTime          int64            `json:"start_time"`
	DurationMs         float64          `json:"duration_ms"`
	CheckMs            float64          `json:"check_ms"`
	ResourceLogChecked bool             `json:"resource_log_checked"`
	// Warnings say when the verdict cannot be trusted as it stands, e.g. an
	// epsilon so wide that no double grant can be seen.
	Warnings []string `json:"warnings,omitempty"`
}

// FaultWindow is one fault's interval (from the event that began it to its
// heal) and the acquires that returned ok inside it.
type FaultWindow struct {
	Fault  string  `json:"fault"` // the event that began it (isolate-node, partition, ...)
	Node   string  `json:"node,omitempty"`
	StartS float64 `json:"start_s"` // seconds since the first event
	EndS   float64 `json:"end_s"`   // the heal; -1 when it was never healed
	Grants int     `json:"grants"`  // acquires whose ok returned inside [start, end]
	// Moment is the fault's dangerous moment (marks.Moment*), and Reached
	// whether this window got there (coverage.go).
	Moment  string `json:"moment"`
	Reached bool   `json:"reached"`
	// RegrantMs is how long after the fault began every key clients asked
	// for had been granted again (regrant.go); -1 when one never was, nil
	// in a results.json written before the checker measured it.
	RegrantMs *float64 `json:"regrant_ms,omitempty"`
}

// LockResult is the lock-service verdict (DESIGN "What the checker must decide" 1).
type LockResult struct {
	Valid Validity              `json:"valid"`
	Keys  map[string]*KeyResult `json:"keys"`
}

// ResourceResult is the mutual-exclusion-at-the-resource verdict (2).
type ResourceResult struct {
	Valid       Validity              `json:"valid"`
	Keys        map[string]*KeyResult `json:"keys"`
	Sections    int                   `json:"sections"`
	LostUpdates int                   `json:"lost_updates"`
	// Rewinds counts accepted writes that set the value below one already
	// accepted (a stale holder's write): each is counted once, not the
	// repeated values the holders after it then wrote.
	Rewinds int `json:"rewinds"`
}

// KeyResult is one porcupine partition's verdict and how it was reached.
type KeyResult struct {
	Valid Validity `json:"valid"`
	Ops   int      `json:"ops"`
	// Witnesses counts definite violations found by the direct check.
	Witnesses int `json:"witnesses"`
	// Porcupine is ok | illegal | unknown | skipped (a witness already decided).
	Porcupine string  `json:"porcupine"`
	Segments  int     `json:"segments"`
	CheckMs   float64 `json:"check_ms"`
}

// Exposure measures how long two clients acted as holder at once.
type Exposure struct {
	Total float64 `json:"total"`
	Max   float64 `json:"max"`
}

// StaleWrites counts writes sent by a holder after another client was granted
// the same lock.
type StaleWrites struct {
	Attempted int `json:"attempted"`
	Rejected  int `json:"rejected"`
	Accepted  int `json:"accepted"`
	Unknown   int `json:"unknown"`
	// NewerTurnedAway counts double holders in which the fence refused the
	// newer holder (its number was set back by a failover) rather than the
	// older one.
	NewerTurnedAway int `json:"newer_turned_away"`
}

// FenceTokens lists fence numbers handed out twice or going backwards.
type FenceTokens struct {
	Duplicates  int          `json:"duplicates"`
	Regressions int          `json:"regressions"`
	List        []FenceIssue `json:"list"`
}

// FenceIssue is one duplicated or regressing fence number.
type FenceIssue struct {
	Kind     string `json:"kind"` // duplicate | regression
	Key      string `json:"key"`
	Fence    int64  `json:"fence"`
	Previous int64  `json:"previous"` // the fence it repeats or falls below
	Clients  []int  `json:"clients"`
	Time     int64  `json:"time"`
	// GrantsBelow counts the grants of a regression episode that stayed below
	// Previous: until the counter catches up, a fenced resource turns every one
	// of those holders away.
	GrantsBelow int `json:"grants_below,omitempty"`
}

// OpCounts counts one operation's outcomes.
type OpCounts struct {
	OK   int `json:"ok"`
	Fail int `json:"fail"`
	Info int `json:"info"`
	// Refused counts the failures that were the fence's verdict (a read or
	// write turned away: verdict rejected); they are part of Fail.
	Refused int `json:"refused"`
}

// Latency holds percentiles per operation.
type Latency struct {
	Acquire Percentiles `json:"acquire"`
}

// Percentiles of completed (ok or fail) operations, in ms.
type Percentiles struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// OptionsEcho records the options a verdict was reached with.
type OptionsEcho struct {
	EpsilonMs float64 `json:"epsilon_ms"`
	BudgetS   float64 `json:"budget_s"`
}

// DoubleHolder is an interval in which two clients both acted as holder.
type DoubleHolder struct {
	Key string `json:"key"`
	// Stale is the client that acquired first; New the one granted during its tenure.
	StaleClient int     `json:"stale_client"`
	NewClient   int     `json:"new_client"`
	StaleToken  string  `json:"stale_token"`
	NewToken    string  `json:"new_token"`
	Start       int64   `json:"start"`
	End         int64   `json:"end"`
	OverlapMs   float64 `json:"overlap_ms"`
	// StaleGranted is when the stale holder's grant returned: a sweep
	// credits a double grant to the fault injection that lost that grant,
	// not to a later one the overlap ran into.
	StaleGranted int64 `json:"stale_granted,omitempty"`
	// DoubleGrant is true when the lock service granted both at once (a lock
	// violation); false when the stale holder's lease had expired honestly.
	DoubleGrant bool `json:"double_grant"`
	// Revoked: the server had ended the stale holder's session before the
	// newer grant (a Revokes mark), releasing its lock honestly; the holder
	// had not yet learned of it. Not a double grant.
	Revoked bool     `json:"revoked,omitempty"`
	Cause   string   `json:"cause"`
	Faults  []string `json:"faults"`
	// StaleWrite: none | accepted | rejected | unknown.
	StaleWrite string `json:"stale_write"`
	// NewTurnedAway is "read" or "write" when the fence turned the *newer*
	// holder away during the overlap (its fence was lower than, or equal to,
	// the stale holder's: the counter on Valkey lost INCRs); empty otherwise.
	NewTurnedAway       string `json:"new_turned_away,omitempty"`
	NewTurnedAwayReason string `json:"new_turned_away_reason,omitempty"`
	// NewOutranked is "read" or "write" when the fence turned the newer
	// holder away although its number was above the stale holder's: a third
	// holder, granted later still, had used the resource with a higher one.
	// Not a fence that sided with the wrong holder, so not counted as one.
	NewOutranked string `json:"new_outranked,omitempty"`
	// OutrankedByLater: that third holder was granted after the newer one
	// (the fence sided with the newest holder); false when its number was
	// older still (a holder from before a counter was set back).
	OutrankedByLater bool `json:"outranked_by_later,omitempty"`
	// NewSentFirst: the newer holder's acquire was sent before the older
	// grant's reply, so the server may have drawn its number first.
	NewSentFirst bool `json:"new_sent_first,omitempty"`
	// StaleTurnedAway is "read" or "write" when the fence turned the stale
	// holder away after the newer holder's grant; empty otherwise.
	StaleTurnedAway string `json:"stale_turned_away,omitempty"`
	// FenceSource is where the newer holder's fence number came from: valkey,
	// resource (the database's sequence) or lease-row; empty without a fence.
	FenceSource string `json:"fence_source,omitempty"`
	// Explanation is written by the report (report.Explain) from the
	// fields above and Evictions.
	Explanation string `json:"explanation"`
	// Evictions is what the node logged of the key's evictions from the
	// stale holder's acquire to the overlap, when the cause is eviction.
	Evictions *Evictions `json:"-"`
	// staleCall and staleGrant are the stale holder's acquire's call and
	// reply: where Evictions are looked for.
	staleCall, staleGrant int64
}

// StalePaid: numbers from the database's sequence turned the stale holder
// away, and the newer holder (the lock's last choice) was protected.
func (d DoubleHolder) StalePaid() bool {
	return d.FenceSource == history.FenceResource && d.StaleTurnedAway != "" && d.NewTurnedAway == ""
}

// Violation is one finding; the report explains it for a workshop attendee.
type Violation struct {
	// Kind: double-grant, non-holder-release, non-holder-extend,
	// lock-not-linearizable, lost-update, resource-not-linearizable,
	// stale-write-accepted, newer-holder-turned-away, stale-holder-turned-away
	// (numbers from the database's sequence protected the newer holder), duplicate-fence,
	// fence-regression.
	Kind string `json:"kind"`
	// Affects names the verdict it falsifies: lock, resource, liveness,
	// ownership, or none for
	// findings that are reported without changing valid.
	Affects string   `json:"affects"`
	Key     string   `json:"key"`
	Clients []int    `json:"clients"`
	Tokens  []string `json:"tokens,omitempty"`
	Start   int64    `json:"start"`
	End     int64    `json:"end"`
	StartS  float64  `json:"start_s"` // seconds since the first event
	EndS    float64  `json:"end_s"`
	Cause   string   `json:"cause"`
	Faults  []string `json:"faults,omitempty"`
	Events  []int64  `json:"events,omitempty"` // history indexes involved
	// Explanation is written by the report (report.Explain) from Facts.
	Explanation string `json:"explanation"`
	Picture     string `json:"picture,omitempty"` // HTML file, relative to the run directory
	// Facts are what shows it, as data (not in results.json).
	Facts *Facts `json:"-"`
}

// ViolationKinds are the kinds a Violation can have, those that falsify a
// verdict (Affects lock, resource, liveness or ownership) first, then the ones only
// reported. Commands that take a kind as input (shrink --kind) check it here.
var ViolationKinds = []string{
	"double-grant", "non-holder-release", "non-holder-extend", "lease-lost", "lock-not-linearizable",
	"lost-update", "rewind", "resource-not-linearizable", "stuck-lock", "expired-on-arrival", "regranted-to-holder",
	"stale-write-accepted", "newer-holder-turned-away", "stale-holder-turned-away", "duplicate-fence", "fence-regression",
}

// MarshalIndent is the form results.json is written in.
func (r *Result) MarshalIndent() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode results: %w", err)
	}
	return append(b, '\n'), nil
}
