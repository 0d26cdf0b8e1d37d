// Command demo-login is a small web app that shows tollgate at work: a
// login with a second step by SMS code, whose every password check, code
// send and code check asks tollgate first (package demo has the app).
//
//	go run ./cmd/tollgate serve &                 # tollgate on 127.0.0.1:8080
//	go run ./examples/demo-login                  # the demo on 127.0.0.1:8081
//
// or both at once with `make demo`, whose tollgate has a small breached
// corpus (testdata/breached-corpus.txt) that lists bob's password: his
// right password asks for a step-up code first (package demo says more).
// Flags:
//
//	-listen ADDR    loopback host:port to listen on (default 127.0.0.1:8081)
//	-tollgate URL   tollgate's base URL (default http://127.0.0.1:8080)
//	-token TOKEN    bearer token for a tollgate with auth configured
//	-code-file FILE file the step-up codes are written to, the demo's
//	                stand-in for e-mail (default: the log)
//
// It listens on loopback only: it trusts loopback peers as its reverse
// proxy and reads X-Forwarded-For from them (demo.LoopbackProxies), so that
// a test can play many client addresses from one machine; never expose
// that setting.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/tollgate-auth/tollgate/api/client"
	"github.com/tollgate-auth/tollgate/examples/demo-login/demo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr))
}

// run parses args, serves until ctx ends and returns the exit status: 2
// for a usage error, 1 when it cannot start.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo-login", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:8081", "loopback `host:port` to listen on")
	tollgateURL := fs.String("tollgate", "http://127.0.0.1:8080", "tollgate's base `URL`")
	token := fs.String("token", "", "bearer `token` for a tollgate with auth configured")
	codeFile := fs.String("code-file", "", "`file` the step-up codes are appended to, the demo's stand-in for e-mail (default: the log)")
	hookSecretFile := fs.String("webhook-secret-file", "", "`file` holding the whsec_ secret of tollgate's webhook endpoint at POST /tollgate/events (default: no endpoint)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if err := checkLoopback(*listen); err != nil {
		fmt.Fprintf(stderr, "demo-login: -listen: %v\n", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	tg, err := client.New(client.Config{BaseURL: *tollgateURL, Token: *token})
	if err != nil {
		fmt.Fprintf(stderr, "demo-login: -tollgate: %v\n", err)
		return 2
	}
	proxies, err := demo.LoopbackProxies()
	if err != nil {
		fmt.Fprintf(stderr, "demo-login: %v\n", err)
		return 1
	}
	hookSecret := ""
	if *hookSecretFile != "" {
		b, err := os.ReadFile(*hookSecretFile)
		if err != nil {
			fmt.Fprintf(stderr, "demo-login: -webhook-secret-file: %v\n", err)
			return 2
		}
		hookSecret = strings.TrimSpace(string(b))
	}
	app, err := demo.New(demo.Config{Tollgate: tg, Proxies: proxies, Logger: log, WebhookSecret: hookSecret, CodeFile: *codeFile})
	if err != nil {
		fmt.Fprintf(stderr, "demo-login: %v\n", err)
		return 1
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "demo-login: %v\n", err)
		return 1
	}
	srv := &http.Server{Handler: app, ReadHeaderTimeout: 5 * time.Second}
	fmt.Fprintf(stderr, "demo-login: open http://%s/ (tollgate at %s)\n", ln.Addr(), *tollgateURL)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		fmt.Fprintf(stderr, "demo-login: %v\n", err)
		return 1
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(shutdown)
	return 0
}

// checkLoopback refuses a listen address that is not a loopback IP and
// port: the demo trusts X-Forwarded-For from loopback peers.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		return fmt.Errorf("%q is not a loopback address such as 127.0.0.1:8081", addr)
	}
	return nil
}
