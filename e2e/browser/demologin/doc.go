// Package demologin holds the end-to-end test of the demo login of
// examples/demo-login: tollgate on a memory store and a manual clock, the
// demo in front of it, and the owner signing in with headless Chromium
// while an attacker guesses her password. It lives in the e2e module, so
// that the browser driver stays out of the service's go.mod.
package demologin
