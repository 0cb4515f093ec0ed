package nemesis

import "github.com/lockjepsen/lockjepsen/truetime"

var nowTrue = truetime.Now
