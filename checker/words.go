package checker

import (
	"fmt"
	"strconv"
	"strings"
)

// Count is n and the noun, singular or plural as n asks: "1 regression",
// "2 regressions", "0 double holders". The plural adds "s", or "es" after
// s, x, z, ch and sh; a noun that does otherwise gives its plural after a
// '|': Count(n, "witness|witnesses").
func Count(n int, noun string) string {
	one, many := noun, ""
	if i := strings.IndexByte(noun, '|'); i >= 0 {
		one, many = noun[:i], noun[i+1:]
	}
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	if many == "" {
		many = plural(one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

func plural(noun string) string {
	// "double holder" → "double holders": the last word takes the plural,
	// unless a phrase follows it ("write of client 3" is not pluralised here).
	for _, suf := range []string{"s", "x", "z", "ch", "sh"} {
		if strings.HasSuffix(noun, suf) {
			return noun + "es"
		}
	}
	if strings.HasSuffix(noun, "y") && len(noun) > 1 && !strings.ContainsRune("aeiou", rune(noun[len(noun)-2])) {
		return noun[:len(noun)-1] + "ies"
	}
	return noun + "s"
}

// HumanDuration writes a duration given in milliseconds the way a person
// reads it: "0.4 ms", "27 ms", "1.8 s", "35 s", "2 min 5 s".
func HumanDuration(ms float64) string {
	switch {
	case ms < 0:
		return "-" + HumanDuration(-ms)
	case ms < 10:
		return trimZero(fmt.Sprintf("%.1f", ms)) + " ms"
	case ms < 1000:
		return fmt.Sprintf("%.0f ms", ms)
	case ms < 10_000:
		return trimZero(fmt.Sprintf("%.1f", ms/1000)) + " s"
	case ms < 60_000:
		return fmt.Sprintf("%.0f s", ms/1000)
	}
	s := int(ms/1000 + 0.5)
	if h := s / 3600; h > 0 {
		if m := s % 3600 / 60; m > 0 {
			return fmt.Sprintf("%d h %d min", h, m)
		}
		return fmt.Sprintf("%d h", h)
	}
	if s%60 == 0 {
		return fmt.Sprintf("%d min", s/60)
	}
	return fmt.Sprintf("%d min %d s", s/60, s%60)
}

func trimZero(s string) string {
	if strings.HasSuffix(s, ".0") {
		return s[:len(s)-2]
	}
	return s
}

// ClientList names client slots in the order given: "client 3", "clients 7
// and 4", "clients 0, 1 and 2"; "no client" for none.
func ClientList(cs []int) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = strconv.Itoa(c)
	}
	switch len(parts) {
	case 0:
		return "no client"
	case 1:
		return "client " + parts[0]
	}
	return "clients " + strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}
