package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

const healthcheckUsage = `usage: tollgate healthcheck [-timeout D] [URL]

Exits 0 when GET URL answers 200, and 1 (saying why on stderr) otherwise: the
probe for an image without a shell (a HEALTHCHECK, a compose healthcheck, an
exec probe). URL defaults to /healthz on 127.0.0.1 at TOLLGATE_LISTEN's port
(8080 when unset); use /readyz to ask whether the store answers too.
`

// healthcheckCmd runs `tollgate healthcheck`.
func healthcheckCmd(ctx context.Context, args []string, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("tollgate healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, healthcheckUsage) }
	timeout := fs.Duration("timeout", 2*time.Second, "give up after `D`")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 1 || *timeout <= 0 {
		fs.Usage()
		return 2
	}
	target := fs.Arg(0)
	if target == "" {
		port := "8080"
		if _, p, err := net.SplitHostPort(getenv("TOLLGATE_LISTEN")); err == nil && p != "" && p != "0" {
			port = p
		}
		target = "http://" + net.JoinHostPort("127.0.0.1", port) + "/healthz"
	}
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		fmt.Fprintf(stderr, "tollgate healthcheck: %q is not an http or https URL\n", target)
		return 2
	}
	if err := probe(ctx, u.String(), *timeout); err != nil {
		fmt.Fprintf(stderr, "tollgate healthcheck: %v\n", err)
		return 1
	}
	return 0
}

// probe GETs target, without proxies or redirects, and fails unless it
// answers 200 within timeout.
func probe(ctx context.Context, target string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", "tollgate-healthcheck")
	c := &http.Client{
		Transport:     &http.Transport{Proxy: nil, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	res, err := c.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", target, res.Status)
	}
	return nil
}
