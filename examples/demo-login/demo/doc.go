// Package demo is the web app of examples/demo-login: a small login with a
// second step by SMS code that asks tollgate before every password check and
// every code send and check, and tells it how each attempt ended.
//
// It shows the parts a login needs around tollgate's Go client
// (api/client):
//
//   - the password step behind a client.Guard, the net/http middleware:
//     it checks before the password (the account from the form, the
//     address through the proxies, the device cookie, the password's
//     fingerprint), answers a delay with HTTP 429, Retry-After and the
//     login page saying how many seconds to wait, and a CAPTCHA verdict
//     with tollgate's proof-of-work challenge, after which the form the
//     user filled in goes on by itself; the handler checks the password
//     and reports (client.AttemptFrom), for unknown accounts exactly as
//     for wrong passwords, with one answer for both;
//   - a client.Responder for the code step's answers that are not "go
//     ahead": a delay is HTTP 429 with Retry-After and a page that says
//     how many seconds to wait, a CAPTCHA verdict serves a CAPTCHA page;
//   - the device cookie (client.DeviceCookie), set once a login has passed
//     both steps and sent as device_token with the next checks, so that an
//     attack on the account or from the owner's address does not slow the
//     owner's browser;
//   - SendOTP before sending a code, with the same message whatever the
//     verdict, and the otp_verify flow (with the destination and channel)
//     when the code is checked;
//   - breached passwords and step-up: the guard looks each reported
//     password up in tollgate's breached-password corpus (five hex digits
//     of its SHA-1 leave the process) and, when a success answers step_up,
//     drops the login's answer and asks for a 6-digit code, "e-mailed" to
//     Config.CodeFile, on the demo's step-up page; once it passed, the
//     login goes on to the SMS step with the pass's device token.
//
// To see the step-up, sign in as bob with his password, builder-42: `make
// demo` gives tollgate a small corpus (examples/demo-login/testdata/
// breached-corpus.txt, SHA1:COUNT lines) that lists it as if it had leaked,
// so his right password gets the step-up page and no session until the
// code, which the demo writes to its log (or to -code-file), passes; then
// the SMS step, and the device cookie after both, with which his browser
// skips the step-up next time. alice's password is in no breach and signs
// in as before. A tollgate started without the corpus answers step_up only
// for an account or address under attack.
//
// Everything else is a stand-in and says so on the page: the users are two
// demo accounts whose passwords the login page shows, the code step's
// CAPTCHA is a checkbox, the "SMS" goes to a panel on the page instead
// of a phone, and the step-up's "e-mail" to a file or the log.
// Sessions live in memory.
//
// Security: LoopbackProxies, which examples/demo-login uses, trusts every
// loopback peer as a reverse proxy and reads X-Forwarded-For from it, so
// that one machine can play many client addresses. That is a demo setting:
// anything on the machine then chooses its own address. A real deployment
// trusts only its own proxies (client.ProxyConfig).
package demo
