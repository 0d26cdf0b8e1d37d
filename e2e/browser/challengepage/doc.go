// Package challengepage holds the browser tests of package challenge: its
// built-in proof-of-work page and solver run in headless Chromium, and the
// login the challenge held goes through. It lives in the e2e module, so
// that the browser driver stays out of the service's go.mod.
package challengepage
