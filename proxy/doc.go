// Package proxy is tollgate in front of a login nobody can change: a
// reverse proxy to one upstream (net/http/httputil's ReverseProxy) that
// checks the requests of its login and one-time-code routes with the
// engine before forwarding them, and reports how the upstream answered
// them, exactly as an integrated caller of the API would — in the process,
// on the same engine, stores and policy.
//
// # Routes
//
// Everything passes through untouched and streaming (request and response
// bodies, WebSocket and other upgrades), except the requests of the routes
// (Route): a flow, methods and a path (exact or prefix). A route's request
// is read whole within Route.MaxBodyBytes (past it a 413 problem, and the
// upstream sees nothing), its fields are read from the form or JSON body
// (the account, optionally the password, the destination of a code), and
// the body goes on byte for byte. A password is fingerprinted in the
// process with a key derived from the server's secret, for the policy's
// password rules (spraying, the same wrong password counted once); it is
// never stored, logged or written to a page.
//
// A flow of checks and reports (login, otp_verify) is checked before the
// request is forwarded and reported after: the upstream's answer is
// classified by the route's Success and Failure matches (status codes, a
// Location pattern, a cookie set, a header, a substring of the body, a
// JSON field). An answer that matches neither, or both, is unknown and
// reports nothing: the check's charge stays, as for any attempt that is
// never reported. A send flow (otp_send) is sent before the request is
// forwarded, and never reported.
//
// # The end user's answer
//
// A delay is 429 with Retry-After and the RateLimit field
// (api/client's Responder): an HTML page on a form route (built in, or
// Config.DelayPage), a problem document on a JSON route — the same bytes
// for every end user with the same wait, whether or not the account
// exists. A captcha is package challenge's: on a form route a page that
// solves a proof of work (or shows a provider's widget) and posts the
// solution to Config.SolutionPath, where the submission held sealed
// meanwhile is sent on, checked again with the challenge solved, without
// the end user typing it again; on a JSON route a problem carrying the
// challenge, whose solution comes back in ChallengeHeader. A send flow's
// deny is answered as a code sent (202).
//
// # The owner's device
//
// On a success the proxy sets its own device cookie (CookieConfig) with
// the engine's device token, and sends it as the device token of the
// browser's later checks, so an owner keeps her own allowance while an
// attacker is delayed. tollgate's cookie and ChallengeHeader never reach
// the upstream.
//
// # Breached passwords and step-up
//
// With Config.Breached (the server's breached-password ranges), the
// password a route of a password flow reads is hashed (SHA-1) in the
// process and its suffix looked for in its range; the report says only
// whether it was found (ReportRequest.Breached), never the hash or a part
// of it, and neither is kept or logged. The engine counts a failure with a
// breached password towards credential stuffing from its address, and may
// answer a success step_up (a breached password, the account or the
// address under attack). The proxy cannot ask for a second factor, so it
// holds the upstream's answer back: its Set-Cookie, Location and body
// never reach the end user, who gets the route's step-up page (403;
// Route.StepUpPage, or a problem document on a JSON route) instead, and
// with Route.StepUpLogout the session the upstream started is ended
// there. Route.StepUpPass lets chosen reasons through (a user sharing a
// sprayer's address who solved its CAPTCHA).
//
// # The client address
//
// The end user's address is resolved as api/client's Proxies resolves it:
// the right-most hop of the one forwarding header that the trusted proxies
// in front write, and only on a connection from one of them. The upstream
// gets X-Forwarded-For with this proxy's own hop appended to a trusted
// chain, or the peer alone.
//
// # Shadow mode
//
// A route in Shadow mode forwards every request whatever the verdict, and
// the engine counts as enforcing would (a refused check reserves nothing,
// so it is not reported): the engine's decision log (tollgate-lab replay
// reads it) and tollgate_proxy_shadow_refusals_total show what enforcing
// would have done, and tollgate_proxy_outcomes_total how the route
// classified the answers, before anyone is refused.
//
// Security caveats. A route sees only what its fields name: a request the
// upstream treats as a login but no route matches is never checked, so
// give every entry point of the credential a route (DokuWiki checks a
// password on any page that receives u and p). A form route refuses a
// field given twice (servers keep different copies) and reads the query
// string too (PHP's $_REQUEST does); a body of another content type is
// not read, as PHP and Django do not read one. The challenge page is
// served at Config.SolutionPath, so an upstream page answering the
// solved submission shows that path in the address bar: a form whose
// action is "" then posts there and gets a 400.
package proxy
