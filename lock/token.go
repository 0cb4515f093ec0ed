package lock

import (
	"crypto/rand"
	"encoding/hex"
)

// NewToken returns 20 random bytes in hex, as the distlock page suggests: a
// value unique across all clients and all acquisitions.
func NewToken() string {
	var b [20]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b[:])
}
