package main

import (
	"context"
	"flag"
	"fmt"
	"github.com/lockjepsen/lockjepsen/knob"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/lockjepsen/lockjepsen/resource"
	"github.com/lockjepsen/lockjepsen/runfolder"
)

func init() {
	register(command{name: "resource", summary: "serve the fenced SQL resource a lock protects, or export its attempts log", run: runResource,
		subcommands: []string{"serve", "export"}})
}

func runResource(args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		return subUsage(args, `usage: lockjepsen resource <serve|export> [flags]

  serve   serve the fenced resource on loopback (HTTP+JSON, docs/resource.md) until
          SIGTERM; prints the bound address on stdout and in --ready-file
  export  write the attempts log as JSON lines (resource.jsonl) from the database
          or from a running service
`)
	}
	switch args[0] {
	case "serve":
		return resourceServe(args[1:])
	case "export":
		return resourceExport(args[1:])
	}
	return fail("resource: unknown subcommand %q (want serve or export)", args[0])
}

// listFlag collects a repeatable, comma-separable flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

const defaultResourceDB = runfolder.ResourceDB

// inFolder says whether file's folder is there, so that file can be made.
func inFolder(file string) error {
	d := filepath.Dir(file)
	if st, err := os.Stat(d); err != nil || !st.IsDir() {
		return fmt.Errorf("its folder %s is not there", d)
	}
	return nil
}

// checkAddr refuses an --addr that is not host:port; an empty host would
// listen on every interface (it was taken: the fenced resource served on
// [::]).
func checkAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: want host:port, e.g. 127.0.0.1:0: %v", addr, err)
	}
	if host == "" {
		return fmt.Errorf("--addr %q names no host: want one, e.g. 127.0.0.1:0", addr)
	}
	return nil
}

// databaseFlags registers --db, --dsn and --schema and returns a function that
// checks them after parsing and fills cfg.
func databaseFlags(fs *flag.FlagSet, cfg *resource.Config) func() error {
	fs.StringVar(&cfg.Path, "db", defaultResourceDB, "SQLite database file (the default backend; created if missing)")
	fs.StringVar(&cfg.DSN, "resource-dsn", "", "PostgreSQL DSN, e.g. postgres://postgres@127.0.0.1:55432/lockjepsen?sslmode=disable (instead of --db), as run --resource-dsn takes it")
	alias(fs, "dsn", "resource-dsn")
	fs.StringVar(&cfg.Schema, "schema", "", "PostgreSQL schema for the tables, created if missing (default: the DSN's search_path)")
	return func() error {
		dbSet := false
		fs.Visit(func(f *flag.Flag) { dbSet = dbSet || f.Name == "db" })
		switch {
		case cfg.DSN != "" && dbSet:
			return fmt.Errorf("give --db (SQLite) or --resource-dsn (PostgreSQL), not both")
		case cfg.DSN != "":
			cfg.Path = ""
		case cfg.Schema != "":
			return fmt.Errorf("--schema applies to PostgreSQL only; add --resource-dsn or drop --schema")
		case cfg.Path == "":
			return fmt.Errorf("--db is empty: name a SQLite file, or give --resource-dsn for PostgreSQL")
		}
		// Checked here, so that the message names the flag: opening the
		// database said "unable to open database file (14)".
		if cfg.DSN != "" {
			if err := resource.CheckDSN(cfg.DSN); err != nil {
				return fmt.Errorf("--resource-dsn: %w", err)
			}
		} else if err := inFolder(cfg.Path); err != nil {
			return fmt.Errorf("--db %s: %w", cfg.Path, err)
		}
		return nil
	}
}

func resourceServe(args []string) int {
	fs := newFlagSet("resource serve", "resource serve [--addr 127.0.0.1:0] [--db FILE | --resource-dsn URL] [--fence none|write|read-write] [--run NAME]... [--ready-file FILE]")
	var (
		cfg   resource.Config
		runs  listFlag
		addr  string
		mode  string
		ready string
	)
	checkDB := databaseFlags(fs, &cfg)
	fs.StringVar(&addr, "addr", "127.0.0.1:0", "listen address; port 0 lets the kernel choose (read it from stdout or --ready-file)")
	mode = string(resource.ModeReadWrite)
	fs.Var(knob.Choice{S: &mode, Among: knob.FenceModes}, "fence", "fence rule: none (no check), write (the Valkey 9 lock article's statement on writes), read-write (reads present the fence too), as run --fence takes it")
	alias(fs, "mode", "fence")
	fs.Var(&runs, "run", "create this run's row (value 0, last_fence 0) if missing; repeat or comma-separate; the run is the lock's name, job-1 for lock:{job-1}")
	fs.StringVar(&ready, "ready-file", "", "write the bound address (host:port) to this file once serving, atomically")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return fail("resource serve: unexpected argument %q", fs.Arg(0))
	}
	if err := checkDB(); err != nil {
		return fail("resource serve: %v", err)
	}
	if err := checkAddr(addr); err != nil {
		return fail("resource serve: %v", err)
	}
	// Before serving: a --ready-file in no folder failed once it served.
	if ready != "" {
		if err := inFolder(ready); err != nil {
			return fail("resource serve: --ready-file %s: %v", ready, err)
		}
	}
	m, err := resource.ParseMode(mode)
	if err != nil {
		return fail("resource serve: --mode: %v", err)
	}
	cfg.Mode, cfg.Runs, cfg.Log = m, runs, os.Stderr

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	svc, err := resource.Start(ctx, cfg, addr)
	if err != nil {
		return fail("resource serve: %v", err)
	}
	// stdout carries only the address, so a runner can read one line from its
	// child; the human note goes to stderr.
	fmt.Println(svc.Addr())
	fmt.Fprintf(os.Stderr, "lockjepsen: resource serving on http://%s, mode %s, %s %s\n", svc.Addr(), m, svc.Store.Backend(), svc.Store.Where())
	if ready != "" {
		if err := resource.WriteReadyFile(ready, svc.Addr()); err != nil {
			svc.Close()
			return fail("resource serve: %v", err)
		}
	}
	select {
	case <-ctx.Done():
	case err := <-svc.Done():
		svc.Close()
		return fail("resource serve: %v", err)
	}
	if err := svc.Close(); err != nil {
		return fail("resource serve: %v", err)
	}
	return exitValid
}

func resourceExport(args []string) int {
	fs := newFlagSet("resource export", "resource export (--db FILE | --resource-dsn URL [--schema S] | --addr HOST:PORT) [--run NAME] [--out resource.jsonl]")
	var (
		cfg  resource.Config
		addr string
		run  string
		out  string
	)
	checkDB := databaseFlags(fs, &cfg)
	fs.StringVar(&addr, "addr", "", "export from a running service instead of a database")
	fs.StringVar(&run, "run", "", "only this run's attempts (default: all runs)")
	fs.StringVar(&out, "out", "-", "output file, written atomically; - for stdout")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return fail("resource export: unexpected argument %q", fs.Arg(0))
	}
	if err := checkDB(); err != nil {
		return fail("resource export: %v", err)
	}
	if addr != "" {
		if err := checkAddr(addr); err != nil {
			return fail("resource export: %v", err)
		}
	}
	switch {
	case out == "":
		return fail("resource export: --out is empty: name a file, or - for stdout")
	case out != "-":
		if err := inFolder(out); err != nil {
			return fail("resource export: --out %s: %v", out, err)
		}
	}
	ctx := context.Background()

	var export func(w io.Writer) (int64, error)
	if addr != "" {
		c := resource.NewClient(addr)
		defer c.Close()
		export = func(w io.Writer) (int64, error) { return c.ExportAttempts(ctx, w, run) }
	} else {
		if cfg.Path != "" {
			// Opening would create an empty database and export nothing, hiding a
			// wrong path.
			if _, err := os.Stat(cfg.Path); err != nil {
				return fail("resource export: no SQLite database at %s: pass the --db the service used", cfg.Path)
			}
		}
		st, err := resource.Open(ctx, cfg)
		if err != nil {
			return fail("resource export: %v", err)
		}
		defer st.Close()
		export = func(w io.Writer) (int64, error) {
			n, err := st.ExportAttempts(ctx, w, run)
			return int64(n), err
		}
	}

	if out == "-" {
		if _, err := export(os.Stdout); err != nil {
			return fail("resource export: %v", err)
		}
		return exitValid
	}
	if err := runfolder.WriteAtomic(out, 0o644, func(w io.Writer) error {
		_, err := export(w)
		return err
	}); err != nil {
		return fail("resource export: %v", err)
	}
	fmt.Fprintf(os.Stderr, "lockjepsen: attempts written to %s\n", out)
	return exitValid
}
