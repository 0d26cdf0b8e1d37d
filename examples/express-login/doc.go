// Package expresslogin holds the end-to-end test of the Express demo login
// in this directory (a Node app, written with @tollgate/client): e2e_test.go
// builds and starts a real tollgate, starts the app with node and drives it
// in headless Chromium. The app itself is TypeScript (src/); see README.md.
package expresslogin
