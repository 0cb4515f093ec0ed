package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// Unmarshal decodes one event line exactly as json.Unmarshal(b, e) does
// (fields it does not know are ignored, keys match case-insensitively), e
// being zero: the flat lines AppendJSON writes take the fast path, anything
// else goes to encoding/json. The runner decodes every client line with it:
// json.Unmarshal was a third of the runner's CPU in bench locks.
func Unmarshal(b []byte, e *Event) error {
	if decodeFast(b, e, nil) == nil {
		return nil
	}
	*e = Event{}
	return json.Unmarshal(b, e)
}

// errSlowPath sends a line to encoding/json, which decides it and words the
// error; the fast decoder only takes the flat lines the writer produces.
var errSlowPath = errors.New("slow path")

// decodeFast decodes one flat event object without reflection: the reader
// spends most of a large history's time here. Anything unusual (escapes,
// nulls, floats, nesting, unknown fields) returns errSlowPath.
func decodeFast(b []byte, e *Event, in *interner) error {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return errSlowPath
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return tail(b, i+1)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return errSlowPath
		}
		j := bytes.IndexByte(b[i+1:], '"')
		if j < 0 {
			return errSlowPath
		}
		key := b[i+1 : i+1+j]
		if bytes.IndexByte(key, '\\') >= 0 {
			return errSlowPath
		}
		i = skipWS(b, i+2+j)
		if i >= len(b) || b[i] != ':' {
			return errSlowPath
		}
		i = skipWS(b, i+1)
		var err error
		switch string(key) {
		case "index":
			e.Index, i, err = num(b, i)
		case "time":
			e.Time, i, err = num(b, i)
		case "process":
			if i < len(b) && b[i] == '"' {
				var s string
				s, i, err = str(b, i, in)
				if err == nil && s != "nemesis" {
					err = errSlowPath
				}
				e.Process = Nemesis
			} else {
				var n int64
				n, i, err = num(b, i)
				if err == nil && n < 0 {
					err = errSlowPath
				}
				e.Process = Process(n)
			}
		case "type":
			var s string
			s, i, err = str(b, i, in)
			e.Type = Type(s)
		case "f":
			e.F, i, err = str(b, i, in)
		case "client":
			var n int64
			n, i, err = num(b, i)
			e.Client = int(n)
		case "key":
			e.Key, i, err = str(b, i, in)
		case "token":
			e.Token, i, err = str(b, i, in)
		case "ttl_ms":
			e.TTLMs, i, err = num(b, i)
		case "fence":
			e.Fence, i, err = num(b, i)
		case "fence_source":
			e.FenceSource, i, err = str(b, i, in)
		case "validity_ms":
			e.ValidityMs, i, err = num(b, i)
		case "expiry":
			e.Expiry, i, err = str(b, i, in)
		case "value":
			var n int64
			n, i, err = num(b, i)
			e.Value = &n
		case "node":
			e.Node, i, err = str(b, i, in)
		case "error":
			e.Error, i, err = str(b, i, in)
		case "verdict":
			e.Verdict, i, err = str(b, i, in)
		case "reply":
			e.Reply, i, err = str(b, i, in)
		case "role":
			e.Role, i, err = str(b, i, in)
		case "detail":
			e.Detail, i, err = str(b, i, in)
		default:
			return errSlowPath
		}
		if err != nil {
			return errSlowPath
		}
		i = skipWS(b, i)
		if i >= len(b) {
			return errSlowPath
		}
		if b[i] == '}' {
			return tail(b, i+1)
		}
		if b[i] != ',' {
			return errSlowPath
		}
		i = skipWS(b, i+1)
	}
}

func tail(b []byte, i int) error {
	if skipWS(b, i) != len(b) {
		return errSlowPath
	}
	return nil
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

func num(b []byte, i int) (int64, int, error) {
	j := i
	if j < len(b) && b[j] == '-' {
		j++
	}
	if j+1 < len(b) && b[j] == '0' && b[j+1] >= '0' && b[j+1] <= '9' {
		return 0, i, errSlowPath // JSON has no leading zeros
	}
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	if j == i || (j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E')) {
		return 0, i, errSlowPath
	}
	n, err := strconv.ParseInt(string(b[i:j]), 10, 64)
	if err != nil {
		return 0, i, errSlowPath
	}
	return n, j, nil
}

// str reads a string without escapes through the interner.
func str(b []byte, i int, in *interner) (string, int, error) {
	if i >= len(b) || b[i] != '"' {
		return "", i, errSlowPath
	}
	j := bytes.IndexByte(b[i+1:], '"')
	if j < 0 {
		return "", i, errSlowPath
	}
	s := b[i+1 : i+1+j]
	for _, c := range s {
		if c == '\\' || c < 0x20 || c >= 0x80 {
			return "", i, errSlowPath // escapes and non-ASCII: let encoding/json check them
		}
	}
	if k, ok := known(s); ok {
		return k, i + 2 + j, nil
	}
	return in.intern(s), i + 2 + j, nil
}

// known returns the schema's own words (types, operation names, fence
// sources, verdicts) without a copy: nearly every event carries two or three.
func known(b []byte) (string, bool) {
	switch string(b) {
	case "invoke":
		return string(Invoke), true
	case "ok":
		return string(OK), true
	case "fail":
		return string(Fail), true
	case "info":
		return string(Info), true
	case FAcquire:
		return FAcquire, true
	case FExtend:
		return FExtend, true
	case FRelease:
		return FRelease, true
	case FRead:
		return FRead, true
	case FWrite:
		return FWrite, true
	case FFence:
		return FFence, true
	case FenceValkey:
		return FenceValkey, true
	case FenceResource:
		return FenceResource, true
	case Accepted:
		return Accepted, true
	case Rejected:
		return Rejected, true
	}
	return "", false
}

// interner shares the strings that repeat across a history (operation
// names, types, keys, nodes, error texts, a token across its acquisition's
// events), so that a million events do not hold a million copies. It is
// emptied when it grows past internMax: tokens repeat close together in time,
// so sharing survives while memory stays bounded. A nil interner shares
// nothing.
type interner map[string]string

const internMax = 1 << 16

func (in *interner) intern(b []byte) string {
	if in == nil {
		return string(b)
	}
	if s, ok := (*in)[string(b)]; ok {
		return s
	}
	if len(*in) >= internMax {
		*in = make(interner, internMax)
	}
	s := string(b)
	(*in)[s] = s
	return s
}
