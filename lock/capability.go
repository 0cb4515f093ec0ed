package lock

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/valkey-io/valkey-go"
)

// Caps is what the server can do, as far as the recipes care.
type Caps struct {
	Product string `json:"product"` // valkey | redis
	// Version is valkey_version on Valkey (redis_version stays 7.2.4 there for
	// compatibility), redis_version on Redis.
	Version  string          `json:"version"`
	Commands map[string]bool `json:"commands"` // COMMAND INFO SET DELIFEQ DELEX EVALSHA WAITAOF
	IFEQ     bool            `json:"ifeq"`     // SET ... IFEQ, Valkey 8.1+
	Lua      bool            `json:"lua"`      // a Lua engine is loaded (Valkey 9.1 can be built without)
	AOF      bool            `json:"aof"`      // appendonly is on (WAITAOF numlocal > 0 needs it)
}

// String names the server, e.g. "Valkey 9.1.2".
func (c Caps) String() string {
	p := c.Product // a recipe's own server check names its product as it is spelt
	switch c.Product {
	case "", "redis":
		p = "Redis"
	case "valkey":
		p = "Valkey"
	}
	return p + " " + c.Version
}

var probeCommands = []string{"SET", "DELIFEQ", "DELEX", "EVALSHA", "WAITAOF"}

// Detect asks the server with COMMAND INFO and INFO.
func Detect(ctx context.Context, c valkey.Client) (Caps, error) {
	caps := Caps{Commands: map[string]bool{}}
	infos, err := c.Do(ctx, c.B().CommandInfo().CommandName(probeCommands...).Build()).ToArray()
	if err != nil {
		return caps, fmt.Errorf("COMMAND INFO: %w", err)
	}
	for i, m := range infos {
		// COMMAND INFO answers nil in the place of an unknown command.
		if i < len(probeCommands) && !m.IsNil() {
			caps.Commands[probeCommands[i]] = true
		}
	}
	info, err := c.Do(ctx, c.B().Info().Section("server").Section("persistence").Section("scriptingengines").Build()).ToString()
	if err != nil {
		// Servers before 7.0 take one section only.
		if info, err = c.Do(ctx, c.B().Arbitrary("INFO").Build()).ToString(); err != nil {
			return caps, fmt.Errorf("INFO: %w", err)
		}
	}
	kv := parseInfo(info)
	if v := kv["valkey_version"]; v != "" {
		caps.Product, caps.Version = "valkey", v
	} else {
		caps.Product, caps.Version = "redis", kv["redis_version"]
	}
	caps.IFEQ = caps.Product == "valkey" && versionAtLeast(caps.Version, 8, 1)
	caps.Lua = caps.Commands["EVALSHA"]
	if n, present := kv["engines_count"]; present && n == "0" {
		caps.Lua = false
	}
	caps.AOF = kv["aof_enabled"] == "1"
	return caps, nil
}

func parseInfo(s string) map[string]string {
	kv := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, found := strings.Cut(strings.TrimSpace(line), ":"); found && !strings.HasPrefix(k, "#") {
			kv[k] = v
		}
	}
	return kv
}

func versionAtLeast(v string, major, minor int) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, _ := strconv.Atoi(parts[0])
	mi, _ := strconv.Atoi(parts[1])
	return ma > major || (ma == major && mi >= minor)
}

// Refusal is Support's answer when the server lacks what the recipe or an
// option needs: the server cannot run this, bad input (exit 254) rather
// than a run that could not be carried out.
type Refusal struct{ msg string }

func (r *Refusal) Error() string { return r.msg }

func refuse(format string, a ...any) error { return &Refusal{fmt.Sprintf(format, a...)} }

// Support says whether caps can run cfg's recipe and options; the error (a
// *Refusal) names what is missing and the version that has it.
func (c Caps) Support(cfg Config) error {
	r, err := Lookup(cfg.Recipe)
	if err != nil {
		return err
	}
	if missing := r.Lacks(c); len(missing) > 0 {
		return refuse("recipe %s refused: %s lacks %s; it must be there on every node that can become primary",
			cfg.Recipe, c, strings.Join(missing, " and "))
	}
	if cfg.WaitAOF.On() {
		if !c.Commands["WAITAOF"] {
			return refuse("WAITAOF refused: %s does not know WAITAOF (Redis 7.2 or any Valkey has it)", c)
		}
		if cfg.WaitAOF.Local > 0 && !c.AOF {
			return refuse("WAITAOF %d %d refused: appendonly is off on %s, so no local fsync can be counted; turn on --appendonly or use WAITAOF 0 %d", cfg.WaitAOF.Local, cfg.WaitAOF.Replicas, c, cfg.WaitAOF.Replicas)
		}
	}
	return nil
}

// Check connects as cfg says, detects the server's capabilities and refuses
// a recipe or option it cannot run; for an exec recipe it then starts the
// program once and has it take and give back a probe key. The runner calls
// it before a run starts.
func Check(ctx context.Context, cfg Config) (Caps, error) {
	caps, err := CheckServer(ctx, cfg)
	if err != nil || ExecProgram(cfg.Recipe) == "" {
		return caps, err
	}
	return caps, probeExec(ctx, cfg)
}

// CheckServer is Check without the exec program's probe: whether the server
// at cfg's address has what the recipe needs, asked with COMMAND INFO and
// INFO and nothing written, so that it holds for a replica too (a write there
// answers READONLY until a failover promotes it, and says nothing of what the
// node can run once it does). It honours ctx and its own 5 s.
func CheckServer(ctx context.Context, cfg Config) (Caps, error) {
	if h, ok := cfg.execHost(); ok {
		if err := cfg.Validate(); err != nil {
			return Caps{}, err
		}
		return h.Server(ctx, cfg)
	}
	r, err := Lookup(cfg.Recipe)
	if err == nil && r.Server != nil {
		if err := cfg.Validate(); err != nil {
			return Caps{}, err
		}
		return r.Server(ctx, cfg)
	}
	if err == nil && r.InResource && cfg.Resource == "" {
		// The lock lives in the resource's database, which a run starts after
		// this check; the Valkey the run still starts is what is detected.
		cfg.Resource = "not yet started"
	}
	if err := cfg.Validate(); err != nil {
		return Caps{}, err
	}
	c, err := Connect(cfg)
	if err != nil {
		return Caps{}, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	caps, err := Detect(ctx, c)
	if err != nil {
		return caps, fmt.Errorf("capability check: %w", err)
	}
	if err := caps.Support(cfg); err != nil {
		return caps, err
	}
	return caps, nil
}
