package challenge

import (
	"context"
	"errors"
	"html/template"
	"net/http"
	"net/netip"
	"time"
)

// Kind is what a challenge asks of the browser.
type Kind uint8

// The kinds of challenge. On the wire they are the lower-case words of
// String.
const (
	// ProofOfWork is the built-in challenge: a nonce found with Web Crypto.
	ProofOfWork Kind = iota + 1
	// Turnstile is Cloudflare Turnstile.
	Turnstile
	// HCaptcha is hCaptcha.
	HCaptcha
	// ReCAPTCHA is Google reCAPTCHA (v2 checkbox, or v3 with its score
	// left to the provider's console).
	ReCAPTCHA
)

var kindNames = [...]string{ProofOfWork: "pow", Turnstile: "turnstile", HCaptcha: "hcaptcha", ReCAPTCHA: "recaptcha"}

// String returns the kind's wire name: "pow", "turnstile", "hcaptcha" or
// "recaptcha"; "unknown" for anything else.
func (k Kind) String() string {
	if k >= ProofOfWork && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// ParseKind returns the kind whose wire name is s; false when none is.
func ParseKind(s string) (Kind, bool) {
	for k := ProofOfWork; int(k) < len(kindNames); k++ {
		if kindNames[k] == s {
			return k, true
		}
	}
	return 0, false
}

// Reason says why a solution was or was not accepted: a stable lower-case
// code for the caller's logs and metrics, never carrying input.
type Reason string

// The reasons of a Result.
const (
	ReasonSolved              Reason = "solved"               // the challenge is solved, and now spent
	ReasonMalformed           Reason = "malformed"            // the token or solution does not parse
	ReasonInvalid             Reason = "invalid"              // the token's signature does not hold for this tenant and handle
	ReasonExpired             Reason = "expired"              // the token's time is up
	ReasonReplayed            Reason = "replayed"             // the challenge (or provider response) was spent already
	ReasonInsufficientWork    Reason = "insufficient_work"    // the nonce's hash has too few leading zero bits
	ReasonNotConfigured       Reason = "not_configured"       // the provider named is not configured on this server
	ReasonProviderRejected    Reason = "provider_rejected"    // the provider answered that the response is not valid
	ReasonProviderUnavailable Reason = "provider_unavailable" // the provider did not answer usably: failed closed
)

// Result is the verdict on one solution. It is a value, not an error: an
// error from Verify is an infrastructure failure (the store).
type Result struct {
	// Solved is true only when the solution is valid and was not spent
	// before; the challenge is spent by this call.
	Solved bool
	// Reason says why.
	Reason Reason
}

// Errors of the infrastructure, checked with errors.Is.
var (
	// ErrStoreUnavailable means the store did not answer: nothing was
	// decided, and nothing may be let through on it.
	ErrStoreUnavailable = errors.New("challenge: store unavailable")
	// ErrStoreFull means the memory store holds as many bytes (or spent
	// challenges) as it may: the submission is not held.
	ErrStoreFull = errors.New("challenge: store full")
	// ErrBodyTooLarge means a submission's body is over MaxBodyBytes.
	ErrBodyTooLarge = errors.New("challenge: body too large")
)

// ProviderConfig configures one CAPTCHA provider that tollgate verifies.
type ProviderConfig struct {
	// Kind is the provider: Turnstile, HCaptcha or ReCAPTCHA. Required.
	Kind Kind
	// SiteKey is the public key the widget is rendered with. Required.
	SiteKey string
	// Secret is the provider's secret key, sent only to VerifyURL.
	// Required.
	Secret string
	// VerifyURL is the siteverify endpoint. The default is the provider's
	// documented one (SiteverifyURL).
	VerifyURL string
}

// Config configures a Challenger.
type Config struct {
	// Secret is the server's secret (at least 16 bytes, the same on every
	// instance): the token key and the sealing key are derived from it with
	// HKDF-SHA256 under labels of their own. Required.
	Secret []byte
	// Difficulty is the leading zero bits a proof-of-work solution needs,
	// 1 to 32: 2^Difficulty hashes on average. The default is 16 (65,536
	// hashes: about a second on a phone in Web Crypto).
	Difficulty int
	// TTL is how long an issued challenge may be solved. The default is 5m.
	TTL time.Duration
	// PendingTTL is how long a held submission waits for its challenge.
	// The default is 5m.
	PendingTTL time.Duration
	// MaxBodyBytes bounds the body of a held submission. The default is
	// 64 KiB.
	MaxBodyBytes int64
	// Store keeps spent challenges and pending submissions. The default is
	// NewMemoryStore(MemoryConfig{Now: Now}).
	Store Store
	// Providers are the CAPTCHA providers tollgate verifies, at most one of
	// each kind. The default is none: proof of work only.
	Providers []ProviderConfig
	// PageKind is what ServePage renders when PageOptions.Kind is zero.
	// The default is ProofOfWork.
	PageKind Kind
	// HTTPClient calls the providers' siteverify. The default is a client
	// with ProviderTimeout as its timeout and no redirects followed.
	HTTPClient *http.Client
	// ProviderTimeout bounds one siteverify call; past it the solution
	// fails (provider_unavailable). The default is 5s.
	ProviderTimeout time.Duration
	// Page, when set, replaces the built-in challenge page; it is executed
	// with a PageData. The default is nil: the built-in page.
	Page *template.Template
	// SolutionPath is where the page POSTs its solution. The default is
	// "/.tollgate/challenge".
	SolutionPath string
	// Now is the clock tokens are issued and checked by. The default is
	// time.Now.
	Now func() time.Time
}

// Challenge is one issued challenge, as a page or a plug-in shows it.
type Challenge struct {
	// Token is the signed challenge: opaque, URL-safe, at most 100 bytes.
	Token string
	// Kind is what it asks for.
	Kind Kind
	// Difficulty is the leading zero bits a proof-of-work solution needs;
	// 0 for a provider.
	Difficulty int
	// Expires is when the token stops being accepted.
	Expires time.Time
	// SiteKey is the provider's site key for the widget; "" for proof of
	// work.
	SiteKey string
}

// IssueOptions say whom a challenge is for.
type IssueOptions struct {
	// Tenant is the caller's tenant: a token verifies only for it. The
	// default is "" (the default tenant).
	Tenant string
	// Kind is what the challenge asks. The default is ProofOfWork.
	Kind Kind
	// Handle, when set, binds the challenge to a held submission: it
	// verifies only with this handle. The default is "": unbound.
	Handle string
}

// Solution is what the browser (or a plug-in for it) sends back.
type Solution struct {
	// Token is the challenge's token; required for proof of work, optional
	// with a provider's response (the page sends it, a plug-in need not).
	Token string
	// Nonce is the proof-of-work nonce: a decimal number below 2^64.
	Nonce string
	// Provider is whose Response this is; zero for proof of work.
	Provider Kind
	// Response is the provider widget's response token.
	Response string
	// RemoteIP, when valid, is passed to the provider as remoteip.
	RemoteIP netip.Addr
}

// Challenger issues and verifies challenges and holds the submissions that
// wait for them. It is safe for concurrent use.
type Challenger struct {
	cfg Config
}

// New returns a Challenger for cfg.
func New(cfg Config) (*Challenger, error) {
	return nil, errors.New("challenge: not built yet")
}

// Issue returns a fresh challenge for o.
func (c *Challenger) Issue(ctx context.Context, o IssueOptions) (Challenge, error) {
	return Challenge{}, errors.New("challenge: not built yet")
}

// Verify checks s for tenant (and, for a challenge bound to a held
// submission, handle) and spends it: a solution is Solved at most once on
// every instance that shares the Store. A provider that cannot be reached
// or answers garbage is a failure, never a pass. The error is an
// infrastructure failure (ErrStoreUnavailable); the Result is then not
// Solved.
func (c *Challenger) Verify(ctx context.Context, tenant, handle string, s Solution) (Result, error) {
	return Result{Reason: ReasonMalformed}, errors.New("challenge: not built yet")
}
