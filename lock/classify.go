package lock

import (
	"errors"
	"net"

	"github.com/lockjepsen/lockjepsen/history"
	"github.com/valkey-io/valkey-go"
)

// ErrRefused marks an operation refused before anything was sent.
var ErrRefused = errors.New("refused before sending")

// Classify maps an error from valkey-go to an outcome:
//   - nil: ok;
//   - a nil reply (SET NX lost the race, IFEQ did not match): fail;
//   - an error reply (-ERR, -NOREPLICAS, -READONLY, -NOSCRIPT...): the server
//     answered that it did nothing: fail;
//   - a refusal before sending or a failed dial: nothing left the client: fail;
//   - anything else (timeout, lost connection, closed client): the command may
//     have run: info.
func Classify(err error) history.Type {
	if err == nil {
		return history.OK
	}
	// valkey-go's IsValkeyNil/IsValkeyErr do not look through wrapping.
	var reply *valkey.ValkeyError
	if errors.As(err, &reply) {
		return history.Fail // a nil reply or an error reply: the server answered
	}
	if errors.Is(err, ErrRefused) {
		return history.Fail
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return history.Fail
	}
	return history.Info
}

// result wraps err with context and classifies it.
func result(err error) Result {
	if err == nil {
		return ok()
	}
	return Result{Outcome: Classify(err), Err: err}
}
