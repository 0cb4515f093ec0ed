// Package knob holds the typed settings that several commands share, each with
// its one parser and its one check, so that `run`, `sweep`, `bench`, `lab` and
// `cluster up` refuse the same bad value with the same message, before
// anything starts. It imports nothing of lockjepsen's: every other package may
// use it.
//
// Each type is a flag.Value; its Set parses and validates at once, so a bad
// value stops flag parsing with a message naming the flag and the fix.
package knob

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseDuration reads a duration as Go writes it (1m30s, 250ms) or as a bare
// number of seconds (30, 0.5), as Jepsen's --time-limit does.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	// NaN, the infinities and 1e300 parse as floats, but as nanoseconds
	// they fit no int64: the conversion would yield -292 years, accepted by
	// any bound below it (check --epsilon took NaN).
	if err != nil || math.IsNaN(f) || math.Abs(f) >= maxSeconds {
		return 0, fmt.Errorf("%q is not a duration: write 30s, 250ms, 1m30s or a number of seconds", s)
	}
	return time.Duration(f * float64(time.Second)), nil
}

// maxSeconds is the longest duration in seconds, about 292 years.
const maxSeconds = float64(math.MaxInt64) / float64(time.Second)

// Duration is a flag.Value for a duration with bounds. Min is inclusive; a
// Max of 0 means no upper bound.
type Duration struct {
	D        *time.Duration
	Min, Max time.Duration
	Why      string // the reason for the bounds, said when a value is refused
}

func (d Duration) String() string {
	if d.D == nil {
		return ""
	}
	return d.D.String()
}

// Set parses and checks v.
func (d Duration) Set(v string) error {
	x, err := ParseDuration(v)
	if err != nil {
		return err
	}
	if x < d.Min || (d.Max > 0 && x > d.Max) {
		return fmt.Errorf("%v is out of range: want %s%s", x, rangeText(d.Min, d.Max), why(d.Why))
	}
	*d.D = x
	return nil
}

func rangeText(lo, hi time.Duration) string {
	if hi > 0 {
		return fmt.Sprintf("%v to %v", lo, hi)
	}
	return fmt.Sprintf("%v or more", lo)
}

func why(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// Int is a flag.Value for a whole number in [Min, Max].
type Int struct {
	N        *int
	Min, Max int
	Why      string
}

func (i Int) String() string {
	if i.N == nil {
		return ""
	}
	return strconv.Itoa(*i.N)
}

// Set parses and checks v.
func (i Int) Set(v string) error {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return fmt.Errorf("%q is not a whole number", v)
	}
	if n < i.Min || n > i.Max {
		return fmt.Errorf("%d is out of range: want %d to %d%s", n, i.Min, i.Max, why(i.Why))
	}
	*i.N = n
	return nil
}

// Choice is a flag.Value for one of a fixed set of words.
type Choice struct {
	S     *string
	Among []string
}

func (c Choice) String() string {
	if c.S == nil {
		return ""
	}
	return *c.S
}

// Set checks v against the set.
func (c Choice) Set(v string) error {
	for _, a := range c.Among {
		if v == a {
			*c.S = v
			return nil
		}
	}
	return fmt.Errorf("%q: want one of %s", v, strings.Join(c.Among, ", "))
}

// OneOf checks a value against a set; the message names the flag.
func OneOf(flag, v string, among []string) error {
	if err := (Choice{S: new(string), Among: among}).Set(v); err != nil {
		return fmt.Errorf("--%s %w", flag, err)
	}
	return nil
}

// Fence modes of the resource (docs/resource.md).
const (
	FenceNone      = "none"
	FenceWrite     = "write"
	FenceReadWrite = "read-write"
)

// FenceModes lists the fence modes.
var FenceModes = []string{FenceNone, FenceWrite, FenceReadWrite}

// Fence sources (--fence-source): where a holder's fence number comes from.
const (
	// FenceSourceValkey is the lock service's own number, drawn with the
	// acquire: INCR fence:{name} in the MULTI on Valkey (for the sql-lease
	// recipe, the lock row's counter).
	FenceSourceValkey = "valkey"
	// FenceSourceResource is a number the resource's database issues from its
	// own sequence, asked for right after the grant (POST /v1/fence).
	FenceSourceResource = "resource"
)

// FenceSources lists the fence sources.
var FenceSources = []string{FenceSourceValkey, FenceSourceResource}

// Runtimes lists where nodes can run.
var Runtimes = []string{"local", "docker"}

// FsyncPolicies lists Valkey's appendfsync values.
var FsyncPolicies = []string{"always", "everysec", "no"}

// Wait is WAIT numreplicas timeout, sent after a granted acquire.
type Wait struct {
	Replicas  int   `json:"replicas"`
	TimeoutMs int64 `json:"timeout_ms"`
}

// On reports whether WAIT is asked for.
func (w Wait) On() bool { return w.Replicas > 0 }

func (w Wait) String() string {
	if !w.On() {
		return ""
	}
	return fmt.Sprintf("%d:%dms", w.Replicas, w.TimeoutMs)
}

// ParseWait reads replicas:timeout (1:100ms); "" is off.
func ParseWait(s string) (Wait, error) {
	if s == "" || s == "off" {
		return Wait{}, nil
	}
	parts := strings.Split(s, ":")
	if len(parts) != 2 {
		return Wait{}, fmt.Errorf("--wait %q: want replicas:timeout, e.g. 1:100ms", s)
	}
	n, err := strconv.Atoi(parts[0])
	if err != nil || n < 0 {
		return Wait{}, fmt.Errorf("--wait %q: replicas must be a whole number >= 0", s)
	}
	ms, err := parseMs(parts[1])
	if err != nil {
		return Wait{}, fmt.Errorf("--wait %q: %v", s, err)
	}
	return Wait{Replicas: n, TimeoutMs: ms}, nil
}

// WaitAOF is WAITAOF numlocal numreplicas timeout.
type WaitAOF struct {
	Local     int   `json:"local"`
	Replicas  int   `json:"replicas"`
	TimeoutMs int64 `json:"timeout_ms"`
}

// On reports whether WAITAOF is asked for.
func (w WaitAOF) On() bool { return w.Local > 0 || w.Replicas > 0 }

func (w WaitAOF) String() string {
	if !w.On() {
		return ""
	}
	return fmt.Sprintf("%d:%d:%dms", w.Local, w.Replicas, w.TimeoutMs)
}

// ParseWaitAOF reads local:replicas:timeout (1:1:100ms); "" is off.
func ParseWaitAOF(s string) (WaitAOF, error) {
	if s == "" || s == "off" {
		return WaitAOF{}, nil
	}
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return WaitAOF{}, fmt.Errorf("--waitaof %q: want local:replicas:timeout, e.g. 1:1:100ms", s)
	}
	l, err1 := strconv.Atoi(parts[0])
	r, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || l < 0 || l > 1 || r < 0 {
		return WaitAOF{}, fmt.Errorf("--waitaof %q: local is 0 or 1, replicas a whole number >= 0", s)
	}
	ms, err := parseMs(parts[2])
	if err != nil {
		return WaitAOF{}, fmt.Errorf("--waitaof %q: %v", s, err)
	}
	return WaitAOF{Local: l, Replicas: r, TimeoutMs: ms}, nil
}

// MinReplicas is the server pair min-replicas-to-write / min-replicas-max-lag.
type MinReplicas struct {
	Count int // min-replicas-to-write; 0 is off
	LagS  int // min-replicas-max-lag, in seconds as Valkey measures it
}

// DefaultMinReplicasLag is Valkey's own default for min-replicas-max-lag.
const DefaultMinReplicasLag = 10

// ParseMinReplicas reads count:lag-seconds (1:10); "" is off with Valkey's
// default lag.
func ParseMinReplicas(s string) (MinReplicas, error) {
	if s == "" || s == "off" {
		return MinReplicas{LagS: DefaultMinReplicasLag}, nil
	}
	parts := strings.Split(s, ":")
	if len(parts) != 2 {
		return MinReplicas{}, fmt.Errorf("--min-replicas %q: want count:lag-seconds, e.g. 1:10", s)
	}
	n, err1 := strconv.Atoi(parts[0])
	lag, err2 := strconv.Atoi(strings.TrimSuffix(parts[1], "s"))
	if err1 != nil || err2 != nil || n < 0 || lag < 0 {
		return MinReplicas{}, fmt.Errorf("--min-replicas %q: count and lag are whole numbers >= 0 (lag in seconds)", s)
	}
	return MinReplicas{Count: n, LagS: lag}, nil
}

func parseMs(s string) (int64, error) {
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return d.Milliseconds(), nil
	}
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms < 0 {
		return 0, fmt.Errorf("timeout %q: want a duration (100ms) or milliseconds (100), not negative", s)
	}
	return ms, nil
}

// Parsed is a flag.Value that keeps a string knob's parsed form: Set runs
// parse at flag time, so a bad value is refused before anything starts.
type Parsed[T any] struct {
	V     *T
	Raw   string
	Parse func(string) (T, error)
}

func (p *Parsed[T]) String() string { return p.Raw }

// Set parses v into *p.V.
func (p *Parsed[T]) Set(v string) error {
	x, err := p.Parse(v)
	if err != nil {
		return err
	}
	*p.V, p.Raw = x, v
	return nil
}

// MaxMemoryPolicies are the maxmemory-policy values Valkey accepts (Valkey's
// "Key eviction" docs): noeviction refuses writes with an OOM error once
// maxmemory is reached; the allkeys-* policies evict any key, the volatile-*
// ones only keys with an expire set, which every lock key has.
var MaxMemoryPolicies = []string{"noeviction", "allkeys-lru", "allkeys-lfu", "allkeys-random",
	"volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"}

// ParseBytes reads a memory size as Valkey's config does: a number of bytes,
// or with a unit kb, mb, gb (powers of 1024; k, m and g too), case ignored.
func ParseBytes(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"b", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSuffix(t, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("%q is no memory size: want bytes or a number with kb, mb or gb, e.g. 16mb", s)
	}
	return n * mult, nil
}
