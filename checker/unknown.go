package checker

import (
	"regexp"
	"sort"
)

// unknownCommandRE matches the server's reply to a command it does not
// have: "ERR unknown command 'DELIFEQ', with args beginning with: ...".
var unknownCommandRE = regexp.MustCompile(`unknown command '([^']+)'`)

// UnknownCommand counts operations that failed because the server did not
// know a command the recipe sent: a node on an older version (DELIFEQ before
// Valkey 9.0, SET ... IFEQ before 8.1) or a build without it. It is the
// server's version failing the recipe, not the lock misbehaving: the
// operation did nothing, and the lock lingers until its TTL.
type UnknownCommand struct {
	Command string         `json:"command"`
	Ops     map[string]int `json:"ops"` // by operation: release, extend, ...
	First   float64        `json:"first_s"`
}

// unknownCommands gathers them, in order of the command's name.
func unknownCommands(ops []Op, t0 int64) []UnknownCommand {
	by := map[string]*UnknownCommand{}
	for i := range ops {
		o := &ops[i]
		if o.Err == "" {
			continue
		}
		m := unknownCommandRE.FindStringSubmatch(o.Err)
		if m == nil {
			continue
		}
		u := by[m[1]]
		if u == nil {
			u = &UnknownCommand{Command: m[1], Ops: map[string]int{}, First: rel(o.Call, t0)}
			by[m[1]] = u
		}
		u.Ops[o.F]++
		u.First = min(u.First, rel(o.Call, t0))
	}
	out := make([]UnknownCommand, 0, len(by))
	for _, u := range by {
		out = append(out, *u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Command < out[j].Command })
	return out
}

// mergeUnknownCommands adds up the groups' counts, command by command.
func mergeUnknownCommands(us []UnknownCommand) []UnknownCommand {
	by := map[string]*UnknownCommand{}
	for _, u := range us {
		m := by[u.Command]
		if m == nil {
			m = &UnknownCommand{Command: u.Command, Ops: map[string]int{}, First: u.First}
			by[u.Command] = m
		}
		for f, n := range u.Ops {
			m.Ops[f] += n
		}
		m.First = min(m.First, u.First)
	}
	out := make([]UnknownCommand, 0, len(by))
	for _, u := range by {
		out = append(out, *u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Command < out[j].Command })
	return out
}
