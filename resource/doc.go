// Package resource is the fenced resource: the thing a lock protects, made real.
//
// It is a row per run in a SQL table, invoice_runs(run_id, value, status,
// last_fence, last_token), guarded by the statement from the Valkey 9 lock article:
//
//	UPDATE invoice_runs SET value = $v, last_fence = $f WHERE run_id = $r AND last_fence < $f
//
// A stale holder's late write matches no row and is turned away. The check is
// done by the database in that one conditional statement, never in Go, so that
// what the simulator shows is what a deployment of the same statement would do.
// Every read and write, accepted or rejected, is logged in an attempts table in
// the same transaction as the decision, stamped with true time
// (CLOCK_MONOTONIC, the clock of history.jsonl).
//
// Storage is embedded SQLite (pure Go, no cgo) by default and PostgreSQL when
// given a DSN; the schema and the statements are the same on both. Store is the
// database side; Server puts it behind a small HTTP+JSON protocol on loopback and
// Client speaks that protocol. Store and Client both implement Resource, so a lock
// client can talk to an embedded store or to a service in another process
// through the same two calls. The protocol and the wording of the replies are
// documented in docs/resource.md.
package resource
