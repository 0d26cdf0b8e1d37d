// Command tollgate-bench is tollgate's load tool, kept out of the server
// binary:
//
//	tollgate-bench [flags] URL [URL...]    load running services over HTTP
//	tollgate-bench ceiling [-listen ADDR]  the Go ceiling server to compare with
//	tollgate-bench table [flags]           BENCHMARKS.md's table in one run: starts
//	                                       Redis and the servers, measures, stops them
//
// tollgate-bench -h and tollgate-bench ceiling -h print their flags;
// BENCHMARKS.md has the commands behind its figures.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs one command and returns the exit status: `ceiling` serves the
// ceiling, `table` measures BENCHMARKS.md's table, anything else is a bench's
// flags and URLs. ctx is cancelled by
// SIGTERM or SIGINT.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "ceiling" {
		return ceilingCmd(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "table" {
		return tableCmd(ctx, args[1:], stdout, stderr)
	}
	return benchCmd(ctx, args, stdout, stderr)
}
