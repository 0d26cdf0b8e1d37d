// Package client is tollgate's Go client for auth systems written in Go: it
// calls tollgate before and after each credential check and before each
// one-time-code send, and turns the verdicts into answers for the end user.
//
// It imports only the standard library, api/wire, golang.org/x/text,
// internal/accountfold (tollgate's account fold, the engine's own code) and
// breached/hibp (the k-anonymity hash and range parser), so a login service
// that uses it pulls in neither the engine, Redis nor YAML.
//
// # Calls
//
// New returns a Client for one tollgate (a base URL, an optional bearer
// token or token source, an *http.Client with connection reuse). Its methods
// are the API's calls, each with a context and a short per-call timeout
// (Config.Timeout, 250 ms by default):
//
//   - Check before looking at the credential, Report after it (with the
//     attempt token the check returned);
//   - SendOTP before sending a one-time code;
//   - Explain and Reset, the admin calls for support desks and on-call;
//     Allow, Deny, Entries and Remove for temporary entries; Reload; and
//     DeadLetters and ReplayWebhook for the webhook deliveries tollgate
//     gave up on.
//
// Errors are typed: a problem+json answer is an *Error with its status and
// problem type (errors.As); tollgate being unreachable, slow or shedding
// load matches ErrUnavailable, and a call that ran out of time also
// ErrTimeout (errors.Is). No error message ever holds an account, IP,
// destination or token: they travel in request bodies only, and the client
// logs nothing.
//
// # Fail modes
//
// A login must not hang or break because tollgate is down. Check, Report and
// SendOTP therefore take a FailMode, chosen per call site, and always return
// a usable Verdict: tollgate's own, or, when tollgate gave none, the fail
// mode's answer, marked Fallback (and with the reason ReasonFallback) and
// returned together with the error so that the caller can log it:
//
//   - FailOpen: proceed, as if tollgate were not there, but at most a small
//     allowance per account and per client address (5 and 50, coming back
//     over 30 minutes, by default); past it, delay as FailDelay does;
//   - FailDelay (the zero FailMode): delay, so the end user retries shortly;
//   - FailCaptcha: ask for a CAPTCHA, and proceed once one is solved.
//
// FailOpen applies only when tollgate is unavailable (ErrUnavailable): a
// request tollgate refused (a 4xx problem, such as an account it will not
// count or a wrong token) is never waved through. Its allowance is the
// safety net of a service that fails open: an attacker who takes tollgate
// down, or floods it into shedding, gets a handful of guesses per account
// rather than a bypass. It is kept in the Client's memory (keyed HMACs,
// bounded by Config.FailOpenSubjects), so share one Client; Client.Stats
// counts what it let through and what it refused. Accounts are folded as
// tollgate folds them (width, zero-width joiners, full case folding, NFC),
// so that every spelling tollgate counts as one account shares one
// allowance.
//
// # End-user answers
//
// What to tell the end user follows from the verdict, and must not tell an
// unknown account from a wrong password. A Responder (NewResponder) writes
// it: Respond answers a delay with HTTP 429, Retry-After and the RateLimit
// headers, a captcha with the caller's CAPTCHA page, a deny like a sent code
// (Accept), and says when to go ahead. It takes the wire.Verdict inside a
// Verdict, so a fallback is answered like one of tollgate's.
//
// # Client IP
//
// tollgate counts the end user's address, so the caller must send the real
// one, not its reverse proxy's. Proxies (NewProxies) resolves it with
// ClientIP: it reads the one forwarding header the caller's own proxies
// write, and only on connections from those proxies, since forwarding
// headers are otherwise the attacker's to choose.
//
// # Device cookie
//
// The device token a successful report returns lets its device skip the IP
// rules and keep an allowance of its own. A DeviceCookie (NewDeviceCookie)
// keeps it in a "__Host-" prefixed, Secure, HttpOnly cookie: Set after a
// success, Token for the next check's DeviceToken, Clear to drop it.
//
// # Login middleware
//
// A Guard (NewGuard) does all of the above for a login route in chi's
// middleware shape, func(http.Handler) http.Handler: before the handler it
// reads the account from the form field (or JSON member) you name, the
// client address through Proxies and the device cookie, computes the
// password fingerprint, and checks; it answers a delay with 429 and
// Retry-After (your page for a browser, a problem document for JSON) and a
// captcha with tollgate's challenge, and runs the handler only for a
// proceed. The handler reports how the attempt ended:
//
//	guard, err := client.NewGuard(client.GuardConfig{
//		Client: tg, AccountField: "username", Proxies: proxies,
//		FingerprintKey: fpKey, // 32 random bytes, kept like a session key
//	})
//	mux.Handle("POST /login", guard.Middleware(http.HandlerFunc(login)))
//
//	func login(w http.ResponseWriter, r *http.Request) {
//		ok := checkPassword(r.PostForm.Get("username"), r.PostForm.Get("password"))
//		outcome := wire.OutcomeFailure
//		if ok {
//			outcome = wire.OutcomeSuccess
//		}
//		client.AttemptFrom(r.Context()).Report(r.Context(), outcome) // sets the device cookie on success
//		...
//	}
//
// The challenge round trip: a captcha verdict on a browser's form post is
// answered with a page that runs tollgate's proof of work (fetched once
// from GET /v1/challenge/solver.js and inlined under a nonce CSP) or a
// provider's widget, and posts the solution back to the same URL with a
// handle. The form the browser had posted waits on the server, sealed
// (AES-256-GCM, GuardConfig.Holds and HoldKey), never echoed into the
// page; tollgate verifies the solution once (POST /v1/challenge/verify),
// and the request goes on as that form, its check sent with
// captcha_solved, so the end user types nothing again. A JSON client gets
// the challenge in a 429 problem document and sends its request again with
// the solution in the Tollgate-Challenge-Token and -Nonce header fields.
//
// The fingerprint key: 32 random bytes, kept as secret as the session key
// (with it, whoever sees the calls to tollgate can test password guesses
// against a fingerprint offline), the same on every instance. tollgate
// never sees it and verifies nothing with it: it only counts fingerprints
// (one password failing on many accounts; a repeated wrong password once).
// A new key makes new fingerprints, so rotating it restarts those counts
// (for at most the rules' windows: 24 hours on the built-in login); there
// is no window in which both keys count as one.
//
// # Breached passwords and step-up
//
// Breached asks whether a password is in the breached-password corpus
// tollgate serves, by k-anonymity: five hex digits of its SHA-1 go to GET
// /v1/breached/{prefix}, and the padded range that comes back is matched
// here, so neither tollgate nor anyone on the way learns the password or
// its hash. It is best-effort (any error, a non-200 or a second without an
// answer is "not breached"); report its answer as ReportRequest.Breached,
// after the password was checked, for failures (credential stuffing) as
// for successes. A success reported breached, or from an account or
// address under attack, may answer step_up: the password was right, but
// sign in only after a second factor, whose outcome ReportStepUp reports
// with the verdict's ticket. Respond answers a step_up with a 403 (or
// ResponderConfig.StepUp's page), never a proceed.
//
// A Guard does both: Attempt.Report looks the password up and reports it,
// and on step_up drops the handler's answer (so a handler written before
// step-up signs no one in), sends a 6-digit code through
// GuardConfig.SendCode (or runs your GuardConfig.StepUp), asks for it on a
// page of its own, checks and reports each try on the step_up flow, and
// runs the handler again as the same login once it passed.
//
// # Webhooks
//
// tollgate posts events (a new device, an account under attack, a store
// outage) to the caller's endpoints, signed as Standard Webhooks.
// VerifyWebhook checks a request's raw body and headers against the
// endpoint's secret and a 5-minute tolerance, and returns the WebhookEvent;
// delivery is at least once, so deduplicate by its ID. The "ref" of a
// Check, Report or SendOTP request (the caller's own opaque reference, such
// as its user id) comes back in the events the call causes, as Data.Ref.
package client
