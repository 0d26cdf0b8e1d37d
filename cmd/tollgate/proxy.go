package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"reflect"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate-auth/tollgate/api"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/challenge"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/proxy"
)

// proxyServer is the reverse proxy (config's proxy section, package
// proxy): a listener of its own, which may face the internet, in front of
// the upstream, whose routes are checked on the server's engine in the
// process. The API keeps its own listener and its loopback rule.
type proxyServer struct {
	p       *proxy.Proxy
	srv     *http.Server
	ln      net.Listener
	certs   *certReloader // nil without the proxy's TLS
	log     *slog.Logger
	timeout time.Duration // the shutdown's bound

	mu      sync.Mutex
	running *config.Proxy // the section the proxy started with; routes as reloaded

	once     sync.Once
	stopping chan struct{}
	stopped  chan struct{}
}

// startProxy opens the proxy's listener and serves it until ctx is done
// or stop is called; nil without a proxy section. The listener is open
// when it returns, so that a port taken is a start-up error.
func startProxy(ctx context.Context, cfg *config.Config, engine *authguard.Engine, secret []byte, ch *challenge.Challenger,
	reg prometheus.Registerer, log *slog.Logger) (*proxyServer, error) {
	pc := cfg.Proxy
	if pc == nil {
		return nil, nil
	}
	pcfg := proxy.Config{
		Upstream: pc.Upstream, Routes: pc.Routes, Secret: secret,
		TrustedProxies: pc.TrustedProxies, ClientIPHeader: pc.ClientIPHeader, Cookie: pc.Cookie,
		SolutionPath: cfg.Challenge.SolutionPath, DelayPage: pc.DelayPage, UpstreamTimeout: pc.UpstreamTimeout,
		RewriteHost: pc.RewriteHost, Registerer: reg, Logger: log,
	}
	if ch != nil {
		pcfg.Challenger = ch
	}
	p, err := proxy.New(pcfg, engine)
	if err != nil {
		return nil, err
	}
	s := &proxyServer{p: p, log: log, timeout: cfg.Timeouts.Shutdown, running: pc,
		stopping: make(chan struct{}), stopped: make(chan struct{})}
	ln, err := net.Listen("tcp", pc.Listen)
	if err != nil {
		return nil, err
	}
	scheme := "http"
	if pc.TLS != nil {
		s.certs, err = newCertReloader(pc.TLS.CertFile, pc.TLS.KeyFile, func(err error) {
			log.Warn("the proxy's TLS certificate changed but does not load; serving the previous one", slog.String("error", err.Error()))
		})
		if err != nil {
			ln.Close()
			return nil, err
		}
		ln = tls.NewListener(ln, &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: s.certs.getCertificate, NextProtos: []string{"h2", "http/1.1"}})
		scheme = "https"
	}
	s.ln = ln
	s.srv = &http.Server{
		Handler: p,
		// No ReadTimeout or WriteTimeout: uploads, downloads and WebSockets
		// stream through for as long as they take. A route's body is read
		// within its bound.
		ReadHeaderTimeout: cfg.Timeouts.ReadHeader,
		IdleTimeout:       cfg.Timeouts.Idle,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          api.NewErrorLog(log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- s.srv.Serve(ln) }()
	go func() {
		select {
		case <-ctx.Done():
		case <-s.stopping:
		case err := <-served:
			log.Error("the proxy stopped serving", slog.String("error", err.Error()))
		}
		sctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		if err := s.srv.Shutdown(sctx); err != nil {
			s.srv.Close()
			log.Warn("proxy: in-flight requests did not finish within the shutdown timeout", slog.String("timeout", s.timeout.String()))
		}
		cancel()
		// Shutdown closes only the listeners Serve has begun with: when the
		// stop comes before Serve's goroutine ran, the port would stay held
		// until it does. Closed here, it is free once stop returns.
		ln.Close()
		close(s.stopped)
	}()
	log.Info("proxy listening",
		slog.String("addr", ln.Addr().String()),
		slog.String("scheme", scheme),
		slog.String("upstream", pc.Upstream.Redacted()),
		slog.Any("routes", routeNames(pc.Routes)))
	return s, nil
}

// stop shuts the proxy down (within the shutdown timeout) and waits for
// it. It does nothing on a nil proxyServer.
func (s *proxyServer) stop() {
	if s == nil {
		return
	}
	s.once.Do(func() { close(s.stopping) })
	<-s.stopped
}

// setBreached gives the proxy the server's breached-password ranges (a
// *breached.Live, which a reload swaps underneath): the routes' passwords
// are then looked up in the process and their reports say whether they
// are breached. It does nothing on a nil proxyServer or nil ranges.
func (s *proxyServer) setBreached(r proxy.BreachedRanges) {
	if s == nil || r == nil {
		return
	}
	s.p.SetBreached(r)
	s.log.Info("proxy: breached-password lookups on")
}

// reloadCert reloads the proxy's certificate (SIGHUP).
func (s *proxyServer) reloadCert() error {
	if s == nil || s.certs == nil {
		return nil
	}
	return s.certs.reload()
}

// check refuses a reload whose routes the proxy cannot serve with next's
// policy (config.Parse has checked them already; this holds the reload to
// what the proxy will take before the policy is swapped).
func (s *proxyServer) check(next *config.Config) error {
	if s == nil || next.Proxy == nil {
		return nil
	}
	if err := proxy.CheckRoutes(next.Proxy.Routes, next.Policy); err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	return nil
}

// reload swaps the routes for next's, once the engine has next's policy.
// The rest of the section (listen, upstream, TLS, addresses, cookie, page)
// applies at a restart: restartNeeded names it.
func (s *proxyServer) reload(next *config.Config) error {
	if s == nil || next.Proxy == nil {
		return nil
	}
	if err := s.p.SetRoutes(next.Proxy.Routes); err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	s.mu.Lock()
	kept := *s.running
	kept.Routes = next.Proxy.Routes
	s.running = &kept
	s.mu.Unlock()
	s.log.Info("proxy routes reloaded", slog.Any("routes", routeNames(next.Proxy.Routes)))
	return nil
}

// proxySettings are a proxy section's settings that only a restart
// applies: all but its routes. nil for no section.
func proxySettings(p *config.Proxy) any {
	if p == nil {
		return nil
	}
	c := *p
	c.Routes, c.DelayPage = nil, nil // DelayPageFile names the page
	return c
}

// proxyRestartNeeded reports whether next's proxy section differs from the
// running one in what only a restart applies: its presence, or a setting
// other than its routes.
func proxyRestartNeeded(running, next *config.Config) bool {
	if (running.Proxy == nil) != (next.Proxy == nil) {
		return true
	}
	return !reflect.DeepEqual(proxySettings(running.Proxy), proxySettings(next.Proxy))
}

// routeNames are the routes' names, for the logs.
func routeNames(routes []proxy.Route) []string {
	out := make([]string, len(routes))
	for i, r := range routes {
		out[i] = r.Name
	}
	return out
}
