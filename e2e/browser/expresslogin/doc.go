// Package expresslogin holds the end-to-end test of the Express demo login
// of examples/express-login (a Node app, written with @tollgate/client): it
// builds and starts a real tollgate, starts the app with node and drives it
// in headless Chromium. It lives in the e2e module, so that the browser
// driver stays out of the service's go.mod; the app itself is TypeScript
// (examples/express-login/src/, README.md).
package expresslogin
