package shrink

// ddmin is minimizing delta debugging (Zeller and Hildebrandt, "Simplifying
// and Isolating Failure-Inducing Input", IEEE TSE 2002) over a set of unit
// numbers: c must pass test (the failure shows); the result is a subset
// that still passes and from which no single unit can be removed. It cuts c
// into n parts and tries each part, then each part's complement, keeping
// the first that passes; when none does it doubles n, and it stops at parts
// of one unit. The caller's test caches its answers: the same subset comes
// back as a part of one round and a complement of the next.
func ddmin(c []int, test func([]int) bool) []int {
	n := 2
	for len(c) >= 2 {
		parts := split(c, n)
		next := -1
		for i := range parts {
			if test(parts[i]) {
				c, next = parts[i], 2
				break
			}
		}
		if next < 0 && n > 2 { // with two parts each complement is the other part
			for i := range parts {
				if rest := without(parts, i); test(rest) {
					c, next = rest, max(n-1, 2)
					break
				}
			}
		}
		switch {
		case next > 0:
			n = next
		case n >= len(c):
			return oneMinimal(c, test)
		default:
			n = min(2*n, len(c))
		}
	}
	return oneMinimal(c, test)
}

// oneMinimal removes single units as long as one can go: ddmin's last round
// has already tried every single removal, so on its result this is one
// cached pass, and it makes 1-minimality hold whatever test did in between.
func oneMinimal(c []int, test func([]int) bool) []int {
	for i := 0; i < len(c); {
		rest := append(append([]int{}, c[:i]...), c[i+1:]...)
		if len(rest) > 0 && test(rest) {
			c, i = rest, 0
			continue
		}
		i++
	}
	return c
}

// split cuts c into n parts of nearly equal length, in order.
func split(c []int, n int) [][]int {
	parts := make([][]int, 0, n)
	for i := 0; i < n; i++ {
		lo, hi := i*len(c)/n, (i+1)*len(c)/n
		if hi > lo {
			parts = append(parts, c[lo:hi])
		}
	}
	return parts
}

// without joins every part but the i-th, in order.
func without(parts [][]int, i int) []int {
	var out []int
	for j, p := range parts {
		if j != i {
			out = append(out, p...)
		}
	}
	return out
}
