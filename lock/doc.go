// Package lock holds the lock recipes lockjepsen puts under test: native
// (Valkey 9 SET IFEQ / DELIFEQ), lua (Redis-era EVAL scripts), unsafe (bare
// PEXPIRE / DEL, the anti-pattern), and the third-party libraries redsync and
// valkeylock driven unchanged. Every recipe reaches the primary through
// Sentinel with valkey-go and reports each operation as ok, fail or info, the
// three outcomes of a Jepsen history. docs/recipes.md lists the exact commands.
package lock
