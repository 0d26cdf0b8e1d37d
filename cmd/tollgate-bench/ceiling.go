package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/tollgate-auth/tollgate/api"
	"github.com/tollgate-auth/tollgate/internal/config"
)

const ceilingUsage = `usage: tollgate-bench ceiling [-listen ADDR]

The "Go ceiling" for tollgate-bench: Go's net/http answering POST /v1/check
and POST /v1/report by decoding the body into a struct, as tollgate does, and
writing a fixed verdict (proceed), with nothing in between. No Go
JSON-over-HTTP service can be faster on the same machine.

flags:
  -listen ADDR  loopback host:port to listen on (default 127.0.0.1:0, a free
                port); it prints the address and its process id
`

// ceilingCmd runs `tollgate-bench ceiling` until ctx is cancelled (SIGINT
// or SIGTERM). It returns 2 on a usage error or a listen address that is
// not loopback, 1 when it cannot listen.
func ceilingCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tollgate-bench ceiling", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, ceilingUsage) }
	listen := fs.String("listen", "127.0.0.1:0", "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "tollgate-bench ceiling: unexpected argument %q\n%s", fs.Arg(0), ceilingUsage)
		return 2
	}
	if err := config.CheckLoopback(*listen); err != nil {
		fmt.Fprintf(stderr, "tollgate-bench ceiling: -listen: %v\n", err)
		return 2
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "tollgate-bench ceiling: %v\n", err)
		return 1
	}
	// The same limits as tollgate's defaults.
	t := config.Default().Timeouts
	srv := &http.Server{
		Handler:           ceilingHandler(),
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       t.Read,
		WriteTimeout:      t.Write,
		IdleTimeout:       t.Idle,
		MaxHeaderBytes:    16 << 10,
	}
	fmt.Fprintf(stdout, "bench-ceiling: listening on %s, pid %d\n", ln.Addr(), os.Getpid())

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		fmt.Fprintf(stderr, "tollgate-bench ceiling: %v\n", err)
		return 1
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	fmt.Fprintln(stdout, "bench-ceiling: stopped")
	return 0
}

// ceilingCheck and ceilingReport are the bodies of a check and a report,
// with the fields of tollgate's wire forms.
type ceilingCheck struct {
	Flow                string `json:"flow"`
	Account             string `json:"account"`
	IP                  string `json:"ip"`
	DeviceToken         string `json:"device_token"`
	CaptchaSolved       bool   `json:"captcha_solved"`
	PasswordFingerprint string `json:"password_fingerprint"`
}

type ceilingReport struct {
	Flow                string `json:"flow"`
	Account             string `json:"account"`
	IP                  string `json:"ip"`
	Outcome             string `json:"outcome"`
	Attempt             string `json:"attempt"`
	DeviceToken         string `json:"device_token"`
	PasswordFingerprint string `json:"password_fingerprint"`
}

// The ceiling's fixed answers, the size of tollgate's.
var (
	ceilingCheckVerdict  = []byte(`{"action":"proceed","delay_ms":0,"retry_after":0,"reasons":[],"attempt":"x","device_token":""}` + "\n")
	ceilingReportVerdict = []byte(`{"action":"proceed","delay_ms":0,"retry_after":0,"reasons":[],"attempt":"","device_token":""}` + "\n")
	ceilingBadRequest    = []byte(`{"type":"about:blank","title":"Bad Request","status":400}` + "\n")
)

// ceilingHandler serves POST /v1/check and POST /v1/report: each body is
// read (at most api.MaxBodyBytes) and decoded into its struct, and a body
// that is not JSON or names no flow is answered 400.
func ceilingHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /v1/check", ceilingVerdict[ceilingCheck](ceilingCheckVerdict, func(b *ceilingCheck) bool { return b.Flow != "" }))
	mux.Handle("POST /v1/report", ceilingVerdict[ceilingReport](ceilingReportVerdict, func(b *ceilingReport) bool { return b.Flow != "" }))
	return mux
}

func ceilingVerdict[T any](answer []byte, valid func(*T) bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body T
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, api.MaxBodyBytes))
		if err == nil {
			err = json.Unmarshal(b, &body)
		}
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		if err != nil || !valid(&body) {
			h.Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write(ceilingBadRequest)
			return
		}
		h.Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}
}
