package challenge

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"html/template"
	"math/bits"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
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
	ReasonNoSubmission        Reason = "no_submission"        // the held submission is gone: redeemed already, or expired
	ReasonUnavailable         Reason = "unavailable"          // the store did not answer: failed closed (with an error)
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
	// 1 to 32: 2^Difficulty hashes on average. The default is 15 (32,768
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
	cfg       Config
	tokenKey  []byte
	aead      cipher.AEAD
	providers map[Kind]ProviderConfig
	client    *http.Client
	page      *template.Template
}

// Limits and defaults.
const (
	// DefaultDifficulty is the leading zero bits asked by default: 2^15 =
	// 32,768 SHA-256 hashes on average, about a second on a phone with
	// Web Crypto (which hashes at some 50,000 a second in Chromium on a
	// busy server core, and slower on a phone).
	DefaultDifficulty = 15
	// MaxDifficulty bounds Difficulty: 2^32 hashes is hours in a browser.
	MaxDifficulty = 32
	// minSecret is the fewest bytes Config.Secret may have.
	minSecret = 16
	// maxResponse bounds a provider's response token (Turnstile's are at
	// most 2048 characters; reCAPTCHA's run to a few thousand).
	maxResponse = 8192
	// providerSpentTTL is how long a provider response is remembered as
	// spent: longer than any provider keeps one valid (Turnstile 5
	// minutes, reCAPTCHA and hCaptcha 2).
	providerSpentTTL = 10 * time.Minute
)

// The HKDF labels of the keys derived from the secret: distinct from every
// other purpose's, so that no key serves two.
const (
	tokenLabel   = "tollgate challenge token v1"
	pendingLabel = "tollgate challenge pending v1"
)

// New returns a Challenger for cfg.
func New(cfg Config) (*Challenger, error) {
	if len(cfg.Secret) < minSecret {
		return nil, fmt.Errorf("challenge: Config.Secret has %d bytes, at least %d are needed", len(cfg.Secret), minSecret)
	}
	if cfg.Difficulty == 0 {
		cfg.Difficulty = DefaultDifficulty
	}
	if cfg.Difficulty < 1 || cfg.Difficulty > MaxDifficulty {
		return nil, fmt.Errorf("challenge: Config.Difficulty is %d; it must be 1 to %d", cfg.Difficulty, MaxDifficulty)
	}
	if cfg.TTL <= 0 {
		cfg.TTL = 5 * time.Minute
	}
	if cfg.PendingTTL <= 0 {
		cfg.PendingTTL = 5 * time.Minute
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 64 << 10
	}
	if cfg.MaxBodyBytes > maxBodyLimit {
		return nil, fmt.Errorf("challenge: Config.MaxBodyBytes is %d; at most %d", cfg.MaxBodyBytes, maxBodyLimit)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Store == nil {
		cfg.Store = NewMemoryStore(MemoryConfig{Now: cfg.Now})
	}
	if cfg.ProviderTimeout <= 0 {
		cfg.ProviderTimeout = 5 * time.Second
	}
	if cfg.SolutionPath == "" {
		cfg.SolutionPath = DefaultSolutionPath
	}
	if !strings.HasPrefix(cfg.SolutionPath, "/") || strings.HasPrefix(cfg.SolutionPath, "//") {
		return nil, errors.New("challenge: Config.SolutionPath must be a path starting with a single /")
	}
	c := &Challenger{cfg: cfg, providers: map[Kind]ProviderConfig{}, client: cfg.HTTPClient, page: cfg.Page}
	for _, p := range cfg.Providers {
		if p.Kind < Turnstile || p.Kind > ReCAPTCHA {
			return nil, fmt.Errorf("challenge: a provider's kind is %s; it must be turnstile, hcaptcha or recaptcha", p.Kind)
		}
		if _, dup := c.providers[p.Kind]; dup {
			return nil, fmt.Errorf("challenge: two providers are %s", p.Kind)
		}
		if p.SiteKey == "" || p.Secret == "" {
			return nil, fmt.Errorf("challenge: provider %s needs a site key and a secret", p.Kind)
		}
		if p.VerifyURL == "" {
			p.VerifyURL = SiteverifyURL(p.Kind)
		}
		if u, err := url.Parse(p.VerifyURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, fmt.Errorf("challenge: provider %s: VerifyURL is not an absolute http(s) URL", p.Kind)
		}
		c.providers[p.Kind] = p
	}
	if cfg.PageKind == 0 {
		c.cfg.PageKind = ProofOfWork
	}
	if k := c.cfg.PageKind; k != ProofOfWork {
		if _, ok := c.providers[k]; !ok {
			return nil, fmt.Errorf("challenge: Config.PageKind is %s, which is not among the providers", k)
		}
	}
	if c.client == nil {
		c.client = &http.Client{
			Timeout: cfg.ProviderTimeout,
			// A siteverify answer is the answer: a redirect is not followed
			// (it would carry the secret elsewhere) and fails closed.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	if c.page == nil {
		c.page = builtinPage
	}
	var err error
	if c.tokenKey, err = hkdf.Key(sha256.New, cfg.Secret, nil, tokenLabel, 32); err != nil {
		return nil, fmt.Errorf("challenge: deriving the token key: %w", err)
	}
	sealKey, err := hkdf.Key(sha256.New, cfg.Secret, nil, pendingLabel, 32)
	if err != nil {
		return nil, fmt.Errorf("challenge: deriving the sealing key: %w", err)
	}
	block, err := aes.NewCipher(sealKey)
	if err != nil {
		return nil, fmt.Errorf("challenge: sealing cipher: %w", err)
	}
	if c.aead, err = cipher.NewGCM(block); err != nil {
		return nil, fmt.Errorf("challenge: sealing cipher: %w", err)
	}
	return c, nil
}

// DefaultSolutionPath is where the built-in page posts by default.
const DefaultSolutionPath = "/.tollgate/challenge"

// SiteverifyURL is the provider's documented siteverify endpoint; "" for
// proof of work.
func SiteverifyURL(k Kind) string {
	switch k {
	case Turnstile:
		return "https://challenges.cloudflare.com/turnstile/v0/siteverify"
	case HCaptcha:
		return "https://api.hcaptcha.com/siteverify"
	case ReCAPTCHA:
		return "https://www.google.com/recaptcha/api/siteverify"
	}
	return ""
}

// Difficulty is the leading zero bits the challenges issued now ask.
func (c *Challenger) Difficulty() int { return c.cfg.Difficulty }

// PageKind is what ServePage renders by default.
func (c *Challenger) PageKind() Kind { return c.cfg.PageKind }

// Provider reports whether k is a provider this Challenger verifies.
func (c *Challenger) Provider(k Kind) bool {
	_, ok := c.providers[k]
	return ok
}

// Issue returns a fresh challenge for o. It fails only for a kind that is
// not configured.
func (c *Challenger) Issue(ctx context.Context, o IssueOptions) (Challenge, error) {
	if o.Kind == 0 {
		o.Kind = ProofOfWork
	}
	ch := Challenge{Kind: o.Kind, Expires: c.cfg.Now().Add(c.cfg.TTL).Truncate(time.Millisecond)}
	if o.Kind == ProofOfWork {
		ch.Difficulty = c.cfg.Difficulty
	} else {
		p, ok := c.providers[o.Kind]
		if !ok {
			return Challenge{}, fmt.Errorf("challenge: %s is not a configured provider", o.Kind)
		}
		ch.SiteKey = p.SiteKey
	}
	t := token{kind: o.Kind, difficulty: uint8(ch.Difficulty), expires: ch.Expires.UnixMilli()}
	rand.Read(t.id[:])
	ch.Token = c.sign(t, o.Tenant, o.Handle)
	return ch, nil
}

// Verify checks s for tenant (and, for a challenge bound to a held
// submission, handle) and spends it: a solution is Solved at most once on
// every instance that shares the Store. A provider that cannot be reached
// or answers garbage is a failure, never a pass. The error is an
// infrastructure failure (ErrStoreUnavailable); the Result is then not
// Solved.
//
// The checks that need no state come first, so that a forged, expired or
// unsolved token costs one HMAC and one hash and touches no store; only a
// valid solution is spent.
func (c *Challenger) Verify(ctx context.Context, tenant, handle string, s Solution) (Result, error) {
	var t token
	hasToken := s.Token != ""
	if hasToken {
		var r Reason
		if t, r = c.open(s.Token, tenant, handle); r != "" {
			return Result{Reason: r}, nil
		}
	} else if s.Provider == 0 || handle != "" {
		// Proof of work has nothing without its token, and a submission is
		// only released to a challenge bound to it.
		return Result{Reason: ReasonMalformed}, nil
	}
	if s.Provider == 0 {
		return c.verifyWork(ctx, t, s)
	}
	if hasToken && t.kind != s.Provider {
		return Result{Reason: ReasonMalformed}, nil
	}
	return c.verifyProvider(ctx, t, hasToken, s)
}

// verifyWork checks a proof-of-work nonce for an authentic, unexpired
// token and spends the token.
func (c *Challenger) verifyWork(ctx context.Context, t token, s Solution) (Result, error) {
	if t.kind != ProofOfWork {
		return Result{Reason: ReasonMalformed}, nil
	}
	nonce, ok := ParseNonce(s.Nonce)
	if !ok {
		return Result{Reason: ReasonMalformed}, nil
	}
	if LeadingZeroBits(WorkHash(s.Token, nonce)) < int(t.difficulty) {
		return Result{Reason: ReasonInsufficientWork}, nil
	}
	return c.spend(ctx, t)
}

// spend marks t's id spent until it expires: Solved the first time only.
func (c *Challenger) spend(ctx context.Context, t token) (Result, error) {
	ttl := time.UnixMilli(t.expires).Sub(c.cfg.Now())
	ok, err := c.cfg.Store.Spend(ctx, "s:"+base64.RawURLEncoding.EncodeToString(t.id[:]), max(ttl, time.Millisecond))
	if err != nil {
		return Result{Reason: ReasonUnavailable}, err
	}
	if !ok {
		return Result{Reason: ReasonReplayed}, nil
	}
	return Result{Solved: true, Reason: ReasonSolved}, nil
}

// verifyProvider asks the provider about s.Response, then spends the token
// (if any) and the response.
func (c *Challenger) verifyProvider(ctx context.Context, t token, hasToken bool, s Solution) (Result, error) {
	p, ok := c.providers[s.Provider]
	if !ok {
		return Result{Reason: ReasonNotConfigured}, nil
	}
	if !WellFormedResponse(s.Response) {
		return Result{Reason: ReasonMalformed}, nil
	}
	if r := c.siteverify(ctx, p, s.Response, s.RemoteIP); r != ReasonSolved {
		return Result{Reason: r}, nil
	}
	if hasToken {
		if r, err := c.spend(ctx, t); !r.Solved {
			return r, err
		}
	}
	sum := sha256.Sum256([]byte(s.Response))
	ok, err := c.cfg.Store.Spend(ctx, "r:"+s.Provider.String()+":"+base64.RawURLEncoding.EncodeToString(sum[:16]), providerSpentTTL)
	if err != nil {
		return Result{Reason: ReasonUnavailable}, err
	}
	if !ok {
		return Result{Reason: ReasonReplayed}, nil
	}
	return Result{Solved: true, Reason: ReasonSolved}, nil
}

// WellFormedResponse reports whether s can be a provider's response:
// printable ASCII, 1 to 8192 bytes, what every provider's tokens are made
// of. Verify calls no provider for anything else.
func WellFormedResponse(s string) bool {
	if s == "" || len(s) > maxResponse {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// WorkHash is SHA-256(token || nonce as 8 bytes big-endian): the hash a
// proof-of-work solution must start with zero bits.
func WorkHash(token string, nonce uint64) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(token))
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], nonce)
	h.Write(n[:])
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// LeadingZeroBits counts the zero bits at the start of h.
func LeadingZeroBits(h [sha256.Size]byte) int {
	n := 0
	for _, b := range h {
		if b != 0 {
			return n + bits.LeadingZeros8(b)
		}
		n += 8
	}
	return n
}

// ParseNonce parses a proof-of-work nonce: decimal digits only (no sign,
// no leading zero but for "0"), below 2^64.
func ParseNonce(s string) (uint64, bool) {
	if s == "" || len(s) > 20 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}
