package workload

import (
	"strings"

	"github.com/lockjepsen/lockjepsen/resource"
)

// Section is what a critical section talks to: the fenced resource
// (resource.Client over HTTP, or a resource.Store in process). A nil Section
// is a think-only section.
type Section = resource.Resource

// RunID is the resource row a lock key protects: lock:{job-1} → job-1.
func RunID(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i:], '}'); j > 1 {
			return key[i+1 : i+j]
		}
	}
	return key
}
