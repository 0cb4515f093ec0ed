package lock

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lockjepsen/lockjepsen/endpoint"
	"github.com/lockjepsen/lockjepsen/history"
	"github.com/lockjepsen/lockjepsen/knob"
	"github.com/valkey-io/valkey-go"
)

// Config says where the server is and how a recipe behaves. It is part of the
// client process's JSON config, so every field has a JSON name.
type Config struct {
	Recipe string `json:"recipe"`
	// Service is where the lock service listens and the protocol it speaks
	// (the deployment's endpoint.Set).
	Service endpoint.Set `json:"service"`
	// Resource is the resource service (host:port) whose database holds the
	// sql-lease recipe's lock rows; the other recipes ignore it.
	Resource string `json:"resource,omitempty"`
	// DriftFactor is Redlock's clock drift factor (validity = TTL − elapsed −
	// TTL·factor − 2ms); 0: DefaultDriftFactor.
	DriftFactor float64 `json:"drift_factor,omitempty"`

	// Fencing draws a fencing token with every acquire:
	// MULTI; SET lock:{name} tok NX PX ttl; INCR fence:{name}; EXEC.
	Fencing bool `json:"fencing,omitempty"`
	// Wait, when Replicas > 0, sends WAIT replicas timeout after a granted
	// acquire; fewer acks release the lock and report the acquire failed.
	Wait WaitOpt `json:"wait,omitempty"`
	// WaitAOF, when Local or Replicas > 0, sends WAITAOF local replicas timeout
	// after a granted acquire, with the same rule.
	WaitAOF WaitAOFOpt `json:"waitaof,omitempty"`

	// TTL and RenewEvery configure valkeylock, whose lease length and extend
	// interval are fixed when the locker is made.
	TTL        time.Duration `json:"-"`
	RenewEvery time.Duration `json:"-"`
	OpTimeout  time.Duration `json:"-"`

	// ExecArgs are the arguments of an exec:PATH program; Client and the
	// initial clock skew are put in its environment (docs/protocol.md).
	ExecArgs []string `json:"exec_args,omitempty"`
	// NeedsDialMap: a fault of the run slows the replication path alone
	// (--net-proxy), so an exec program's probe must say at init that it
	// dials through LOCKJEPSEN_DIAL_MAP.
	NeedsDialMap bool `json:"-"`
	// NeedsPartition: a fault of the run cuts nodes off from clients in the
	// clients (Redlock's partial partition), so an exec program's probe
	// must say at init that it takes the "unreachable" request.
	NeedsPartition bool `json:"-"`
	// NeedsReplies: the reply faults of the run (ReplyCancel, ReplyDrop),
	// which an exec program's probe must say at init that it takes.
	NeedsReplies  []string `json:"-"`
	Client        int      `json:"-"`
	ClockOffsetMs float64  `json:"-"`
	ClockRate     float64  `json:"-"`
}

// WaitOpt is WAIT numreplicas timeout; knob owns its syntax and check.
type WaitOpt = knob.Wait

// WaitAOFOpt is WAITAOF numlocal numreplicas timeout.
type WaitAOFOpt = knob.WaitAOF

// Recipe names.
const (
	Native     = "native"
	Lua        = "lua"
	Unsafe     = "unsafe"
	Redsync    = "redsync"
	Valkeylock = "valkeylock"
	SQLLease   = "sql-lease"
)

// Recipe is one lock recipe: everything the rest of lockjepsen asks about
// it lives in its entry, so adding a recipe is one entry and one open
// function.
type Recipe struct {
	Name    string
	Summary string
	// Ours: the recipe's own commands carry the token, so fencing and WAIT
	// (which must share the acquire's connection) can wrap them. A library
	// driven unchanged writes on its own connections and cannot be fenced.
	Ours bool
	// Lacks names what a server must have for the recipe and does not; nil
	// when it can run there.
	Lacks func(Caps) []string
	open  func(cfg Config) (Lock, error)
	// Speaks lists the protocols it can reach a lock service by: it runs on
	// every deployment that speaks one of them (Offerer).
	Speaks []endpoint.Protocol
	// Library is the Go module whose lock code the recipe drives unchanged
	// (`lockjepsen version` prints the version built in); zero for none.
	Library Library
	// Driven: the recipe drives someone else's lock code unchanged, a
	// third-party library or a team's own program (exec), not the project's
	// recipes nor a deployment's own client; a sweep over such recipes
	// reports its rows as locks.
	Driven bool
	// Server, when set, is the recipe's own check of the server it runs
	// on (a recipe that speaks no Valkey), in place of COMMAND INFO; nil:
	// the Valkey check.
	Server func(ctx context.Context, cfg Config) (Caps, error)
	// Fence is where its fence numbers come from (the history's
	// fence_source) when not Valkey's INCR; "" for that.
	Fence string
	// Valid checks its config without contacting a server, in place of
	// the Valkey recipes' checks; nil for those.
	Valid func(c *Config) error
	// SelfRenews: the library extends its leases inside itself
	// (valkeylock), so no watchdog of the client's can be stalled.
	SelfRenews bool
	// FenceOnDemand: the recipe draws a fence only when the run fences: a
	// program need not implement fences, and a consensus service's log
	// position (a key's revision, a node's creation id) is asked for only then.
	FenceOnDemand bool
	// LeavesNoTTL: an anti-pattern kept on purpose can leave the key with
	// no TTL (SETNX then EXPIRE, an extend without PX): a client that dies
	// at the wrong moment leaves a lock nobody can take again.
	LeavesNoTTL bool
	// Unchecked: an anti-pattern kept on purpose extends and releases
	// without comparing the token, so a client outliving its lease acts on
	// a lock that is no longer its own.
	Unchecked bool
	// HostsExec: the recipe is the built-in one of a protocol that is not
	// Valkey's (execHost): an exec program on a deployment speaking it
	// borrows the recipe's server check, validation and fence source.
	HostsExec bool
	// conform connects client-test's checks (conformance.go) to a server
	// of the protocol a HostsExec recipe is the built-in one of.
	conform func(Config) (server, error)
	// Replies: the reply faults reach its calls (lock/replyfault.go): the
	// connections the project's Valkey clients dial carry the hook, and an
	// exec program is told (its probe refuses one that did not say at init
	// it takes the fault). The consensus services' and the SQL clients
	// are not hooked.
	Replies bool
	// Partitions: its clients can be told that some nodes are unreachable
	// (Reachability), which Redlock's partial partition needs; an exec
	// program must also say so at init (Config.NeedsPartition).
	Partitions bool
	// InResource: the lock lives in the resource's database (sql-lease),
	// which a run starts after the server check: the Valkey the run still
	// starts is what that check detects. Such a lock is a service of its
	// own, and Compared is its row in the comparison of lock services.
	InResource bool
	Compared   *Comparison
	// NoExpiry: the server never expires the lock; it holds it until the
	// unlock or the session's end (PostgreSQL's advisory locks). The TTL is
	// then the client's own lease, and the history says so (expiry none),
	// so the checker does not read a late unlock as one no server allows.
	NoExpiry bool
}

// Comparison is an InResource recipe's row in the comparison sweep, which
// runs it beside the default deployment's nodes, fenced by its own counter.
type Comparison struct {
	Note string
	// ClockNA is why the clock-jump fault kind has no counterpart on it.
	ClockNA string
}

// Fences reports whether the recipe can draw a fencing token. An exec
// program can, if it returns fences: the run's start checks that it does.
func (r Recipe) Fences() bool { return r.Ours || r.FenceOnDemand }

// DrawsFence reports whether the recipe's clients draw a fencing token with
// every grant in a run with this --fence and --fence-source: never when the
// resource issues the number; an exec program and a FenceOnDemand recipe only
// when the run fences, the other recipes that can always, so that an unfenced
// run's history still shows which grant came after which.
func (r Recipe) DrawsFence(fence, source string) bool {
	if !r.Fences() || source == knob.FenceSourceResource {
		return false
	}
	if r.FenceOnDemand {
		return fence != knob.FenceNone
	}
	return true
}

func needsNative(c Caps) []string {
	var missing []string
	if !c.IFEQ {
		missing = append(missing, "SET ... IFEQ to extend (Valkey 8.1 or newer)")
	}
	if !c.Commands["DELIFEQ"] {
		missing = append(missing, "DELIFEQ to release (Valkey 9.0 or newer)")
	}
	return missing
}

func needsLua(c Caps) []string {
	if !c.Lua {
		return []string{"a Lua engine (EVALSHA unknown or INFO scriptingengines engines_count:0, e.g. a Valkey 9.1 build with BUILD_LUA=no)"}
	}
	return nil
}

// The protocols a recipe speaks: those a Valkey client reaches one primary
// by (through a watcher, directly, or over the cluster bus: every recipe
// that opens its client with the recipe's connection options; and
// sql-lease, whose lock is a row in the resource's database, beside the same
// deployments), or any valkey-go speaks, independent primaries too
// (redsync's pools). An exec program runs on every deployment: it is handed
// the deployment's own endpoints (ExecEnv), and speaks whatever protocol
// they serve.
var (
	primaryOrBus      = protocolsWhere(func(p endpoint.Protocol) bool { return p.Valkey() && !p.Independent() })
	primaryBusOrNodes = protocolsWhere(endpoint.Protocol.Valkey)
	everywhere        = endpoint.Protocols
)

// protocolsWhere lists the protocols that have a property, in their order.
func protocolsWhere(has func(endpoint.Protocol) bool) []endpoint.Protocol {
	var out []endpoint.Protocol
	for _, p := range endpoint.Protocols {
		if has(p) {
			out = append(out, p)
		}
	}
	return out
}

var recipes = []Recipe{
	{Name: Native, Summary: "SET NX PX / SET IFEQ PX / DELIFEQ (Valkey 9.0+)", Ours: true, Lacks: needsNative, open: openNative, Speaks: primaryOrBus, Replies: true},
	{Name: Lua, Summary: "SET NX PX / EVALSHA compare-PEXPIRE / EVALSHA compare-DEL", Ours: true, Lacks: needsLua, open: openLua, Speaks: primaryOrBus, Replies: true},
	{Name: Unsafe, Summary: "SET NX PX / bare PEXPIRE / bare DEL (anti-pattern)", Ours: true, Lacks: func(Caps) []string { return nil }, open: openUnsafe, Speaks: primaryOrBus, Replies: true, Unchecked: true},
	{Name: Redsync, Summary: "github.com/go-redsync/redsync/v4 over valkeycompat, one pool", Lacks: needsLua, open: openRedsync, Speaks: primaryBusOrNodes, Driven: true, Replies: true, Library: redsyncLibrary},
	{Name: RedsyncSharedValue, Summary: "redsync misconfigured (go-redsync/redsync#126): every client's WithGenValueFunc returns one constant, so any client's delete script frees the holder's lock", Lacks: needsLua, open: openRedsyncShared, Speaks: primaryBusOrNodes, Driven: true, Replies: true, Library: redsyncLibrary},
	{Name: Valkeylock, Summary: "valkey-go's valkeylock, KeyMajority 1, self-renewing", Lacks: needsLua, open: openValkeylock, Speaks: primaryOrBus, Driven: true, SelfRenews: true, Replies: true, Library: Library{Module: "github.com/valkey-io/valkey-go", Name: "valkey-go"}},
	{Name: Redislock, Summary: "github.com/bsm/redislock on go-redis: Lua obtain (re-takes its own token), compare-PEXPIRE refresh, compare-DEL release", Lacks: needsLua, open: openRedislock, Speaks: primaryOrBus, Driven: true, Replies: true, Library: Library{Module: "github.com/bsm/redislock", Name: "redislock"}},
	{Name: SQLLease, Summary: "the database's own lease: a row UPDATEd in the resource's SQL database, fence = the row's counter (no Valkey)", Ours: true, Lacks: func(Caps) []string { return nil }, open: openSQLLease, Speaks: primaryOrBus, Fence: history.FenceLeaseRow, Valid: validateSQLLease, InResource: true,
		Compared: &Comparison{Note: "the database's own lease row, fenced by the row's counter (--recipe sql-lease; no Valkey in the lock path)",
			ClockNA: "the lease row expires on the database's clock (with SQLite the resource service's, a Go process libfaketime " +
				"cannot move; with PostgreSQL clock_timestamp()), and no fault moves it"}},
	{Name: Exec, Summary: "your own lock client: a program speaking docs/protocol.md on stdin/stdout (exec:PATH)", Lacks: func(Caps) []string { return nil }, open: openExec, Speaks: everywhere, Driven: true, FenceOnDemand: true, Partitions: true, Replies: true},
	{Name: SetnxExpire, Summary: "SETNX then PEXPIRE, two commands (anti-pattern: a crash between them leaves a key without TTL)", Lacks: needsNative, open: openSetnxExpire, Speaks: primaryOrBus, Replies: true, LeavesNoTTL: true},
	{Name: ExtendNoPX, Summary: "native, but extend with SET IFEQ without PX (anti-pattern: the TTL is dropped)", Ours: true, Lacks: needsNative, open: openExtendNoPX, Speaks: primaryOrBus, Replies: true, LeavesNoTTL: true},
}

// redsyncLibrary is what both redsync recipes drive.
var redsyncLibrary = Library{Module: "github.com/go-redsync/redsync/v4", Name: "redsync", Note: "pools through " + RedsyncAdapter}

// registerRecipes appends the recipes a deployment of its own brings, each
// from the init of its own file, so that this table names none of them; Go
// runs a package's inits in file name order, which keeps the catalog's order
// fixed.
func registerRecipes(rs ...Recipe) {
	for _, r := range rs {
		if _, err := Lookup(r.Name); err == nil {
			panic("lock: recipe " + r.Name + " registered twice")
		}
	}
	recipes = append(recipes, rs...)
}

// Expiry is what an acquire or extend of cfg's recipe records as the
// server's expiry: history.ExpiryNone for a lock no server expires, ""
// for a TTL the server keeps.
func Expiry(cfg Config) string {
	if r, err := Lookup(cfg.Recipe); err == nil && r.NoExpiry {
		return history.ExpiryNone
	}
	return ""
}

// FenceSource names where a recipe's own fence numbers come from, as the
// history's fence_source field says it. An exec program on a deployment that
// does not speak Valkey returns the fence its built-in recipe would (execHost):
// docs/protocol.md asks it, and client-test checks each returned fence
// against that recipe's source.
func FenceSource(cfg Config) string {
	if r, err := Lookup(cfg.Recipe); err == nil && r.Fence != "" {
		return r.Fence
	}
	if h, ok := cfg.execHost(); ok {
		return h.Fence
	}
	return history.FenceValkey
}

// Lookup finds a recipe by name; the error lists the known ones. exec:PATH
// is the exec recipe (its program must be an executable file).
func Lookup(name string) (Recipe, error) {
	if name == Exec || ExecProgram(name) != "" {
		if err := checkProgram(name); err != nil {
			return Recipe{}, err
		}
		name = Exec
	}
	for _, r := range recipes {
		if r.Name == name {
			return r, nil
		}
	}
	return Recipe{}, fmt.Errorf("unknown recipe %q: want one of %s", name, strings.Join(Names(), ", "))
}

// Offerer is what a recipe asks of a deployment (cluster.Deployment is
// one): its name, and the protocol its clients speak.
type Offerer interface {
	Name() string
	Protocol() endpoint.Protocol
}

// RunsOn says whether a recipe can run on deployment d (some need in its
// entry's Speaks that d speaks); the error names the deployments among all that
// it runs on, and the recipes that run on d.
func RunsOn(recipe string, d Offerer, all []Offerer) error {
	r, err := Lookup(recipe)
	if err != nil {
		return err
	}
	if r.runsOn(d) {
		return nil
	}
	var where, here []string
	for _, o := range all {
		if r.runsOn(o) {
			where = append(where, o.Name())
		}
	}
	for _, o := range recipes {
		if o.runsOn(d) {
			here = append(here, o.Name)
		}
	}
	return fmt.Errorf("--recipe %s does not run on --topology %s (it runs on %s): on %s use %s", recipe, d.Name(),
		strings.Join(where, ", "), d.Name(), strings.Join(here, ", "))
}

func (r Recipe) runsOn(d Offerer) bool {
	return slices.Contains(r.Speaks, d.Protocol())
}

// RunsOn says whether the recipe can run on deployment d.
func (r Recipe) RunsOn(d Offerer) bool { return r.runsOn(d) }

// Recipes lists the catalog in its order, for the generated docs.
func Recipes() []Recipe { return slices.Clone(recipes) }

// Library is a Go module a recipe drives: its path, the name a person
// knows it by, and a note on how this build uses it.
type Library struct {
	Module, Name, Note string
}

// Libraries lists the modules the recipes drive, each once, in the
// catalog's order.
func Libraries() []Library {
	var out []Library
	for _, r := range recipes {
		if r.Library.Module != "" && !slices.ContainsFunc(out, func(l Library) bool { return l.Module == r.Library.Module }) {
			out = append(out, r.Library)
		}
	}
	return out
}

// Names lists the recipes.
func Names() []string {
	out := make([]string, 0, len(recipes))
	for _, r := range recipes {
		if r.Name == Exec {
			out = append(out, Exec+":PATH")
			continue
		}
		out = append(out, r.Name)
	}
	sort.Strings(out)
	return out
}

// Summary describes a recipe in one line; "" for an unknown name.
func Summary(name string) string {
	r, _ := Lookup(name)
	return r.Summary
}

// Validate checks the config without contacting a server.
func (c *Config) Validate() error {
	spec, err := Lookup(c.Recipe)
	if err != nil {
		return err
	}
	if spec.Valid != nil {
		return spec.Valid(c)
	}
	if h, ok := c.execHost(); ok {
		return h.Valid(c)
	}
	if err := c.Service.Validate(); err != nil {
		return fmt.Errorf("lock config: %w", err)
	}
	if !c.Service.Protocol.Valkey() {
		return fmt.Errorf("recipe %s speaks Valkey; the deployment speaks %s", c.Recipe, c.Service.Protocol)
	}
	if !spec.Ours {
		// The library sends its own commands on its own connections: an INCR or
		// a WAIT on another connection would not cover them.
		switch {
		case c.Fencing && spec.Name != Exec: // an exec program may return fences; Check asks it
			return fmt.Errorf("recipe %s cannot fence: the library's SET NX is not ours to wrap in MULTI with an INCR; use native or lua", c.Recipe)
		case c.Wait.On():
			return fmt.Errorf("recipe %s cannot WAIT: WAIT counts only its own connection's writes, and the library writes on its own; use native or lua", c.Recipe)
		case c.WaitAOF.On():
			return fmt.Errorf("recipe %s cannot WAITAOF: it counts only its own connection's writes, and the library writes on its own; use native or lua", c.Recipe)
		}
	}
	if len(c.ExecArgs) > 0 && spec.Name != Exec {
		return fmt.Errorf("exec arguments given for recipe %s: they are for exec:PATH", c.Recipe)
	}
	if c.Wait.Replicas < 0 || c.Wait.TimeoutMs < 0 || c.WaitAOF.Local < 0 || c.WaitAOF.Local > 1 || c.WaitAOF.Replicas < 0 || c.WaitAOF.TimeoutMs < 0 {
		return fmt.Errorf("wait options: replicas and timeouts must be >= 0, WAITAOF local 0 or 1")
	}
	return nil
}

// execHost is, for an exec program handed a deployment that does not speak
// Valkey, that deployment's built-in recipe, whose server check, validation
// and fence source the program borrows: the program is checked against the
// same server the built-in recipe is, and its fences are asked of the same
// source (docs/protocol.md). ok is false for a program on Valkey.
func (c *Config) execHost() (host Recipe, ok bool) {
	if ExecProgram(c.Recipe) == "" {
		return Recipe{}, false
	}
	for _, r := range recipes {
		if r.HostsExec && slices.Contains(r.Speaks, c.Service.Protocol) {
			return r, true
		}
	}
	return Recipe{}, false
}

// Open validates cfg and connects the recipe.
func Open(cfg Config) (Lock, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r, _ := Lookup(cfg.Recipe)
	l, err := r.open(cfg)
	if err != nil {
		return nil, fmt.Errorf("open recipe %s: %w", cfg.Recipe, err)
	}
	return l, nil
}

// clientOption builds the valkey-go options: the protocol's own route to the
// primary (routes: a watcher's discovery, the cluster client), else the one
// server given. Retries are off because a retried SET NX or DELIFEQ after a
// lost reply would hide the unknown outcome the history must record;
// client-side caching is off because locks never read through it.
func (c *Config) clientOption() valkey.ClientOption {
	o := valkey.ClientOption{DisableRetry: true, DisableCache: true}
	// Every connection goes through the dial map (--net-proxy) and the
	// reply faults' hook, which passes everything through unless armed.
	o.DialCtxFn = func(ctx context.Context, addr string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
		return hookConn(d.DialContext(ctx, "tcp", c.dial(addr)))
	}
	if route, ok := routes[c.Service.Protocol]; ok {
		return route(c, o)
	}
	// One server; on independent primaries every node runs the same
	// server, so the capability check asks the first.
	o.InitAddress = []string{c.Service.Addr()}
	o.ForceSingleClient = true
	return o
}

// routes are the valkey-go options of the protocols that reach the primary
// by a route of their own, each set from the file of its client.
var routes = map[endpoint.Protocol]func(*Config, valkey.ClientOption) valkey.ClientOption{}

// dial is the address to dial for addr: its DialMap entry, or addr.
func (c *Config) dial(addr string) string { return c.Service.Dial(addr) }

// Connect opens a plain valkey-go client with the recipe's connection
// options; tests and the capability check use it.
func Connect(cfg Config) (valkey.Client, error) {
	c, err := valkey.NewClient(cfg.clientOption())
	if err != nil {
		return nil, fmt.Errorf("connect to Valkey: %w", err)
	}
	return c, nil
}
