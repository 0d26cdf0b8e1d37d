// Package browser is the module of tollgate's browser tests: the demo
// logins of examples/ (demologin, expresslogin) and the challenge page
// (challengepage) driven in headless Chromium through browsertest. It is a
// module of its own so that the browser driver (chromedp) stays out of the
// service's go.mod; `make test` runs it. Without Chromium the tests skip
// (and fail when CI=true; scripts/ensure-chromium.sh installs it).
package browser
