// Package e2e puts tollgate's reverse proxy (package proxy, `tollgate
// serve` with a proxy section) in front of real logins nobody here wrote —
// Django's admin and DokuWiki, from Debian's packages — and attacks them
// with a real attacker's tool, hydra, while a real owner signs in with
// headless Chromium. What reached each application is counted on the
// application's side (Django's login signals, the PHP server's request
// log), never from tollgate's metrics.
//
// It is a module of its own, so that the browser and the real software its
// tests need stay out of the service's module. Its tests start one shared
// set-up per test binary (TestMain): the tollgate binary built from this
// repository, a real redis-server, Django's development server on a
// project made by django-admin startproject, DokuWiki on PHP's built-in
// server, and tollgate serve in front of each, every process on a free
// loopback port and stopped by its process id. scripts/ensure-realapps.sh
// installs the software; without it the tests skip (and fail when
// CI=true).
package e2e
