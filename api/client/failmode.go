package client

import (
	"errors"
	"strconv"
	"time"

	"github.com/tollgate-auth/tollgate/api/wire"
)

// FailMode is what a call site answers when tollgate gives no verdict. Each
// call site picks its own: a login form may fail open while a password
// reset or an SMS send fails closed.
//
// The answer is a Verdict with Fallback set and the reason ReasonFallback,
// returned with the call's error. Which answer:
//
//   - When tollgate is unavailable (errors.Is(err, ErrUnavailable): down,
//     slow, shedding with 503 overloaded, failing with a 5xx), the mode's
//     own: FailOpen proceeds within a local allowance per account (a
//     send's destination) and per address, and past it answers as
//     FailDelay, with ReasonFallbackAllowance after ReasonFallback (see
//     Config.FailOpenPerAccount); FailDelay delays by FallbackDelay, or by
//     the Retry-After a 503 asked for, up to MaxFallbackDelay; FailCaptcha
//     asks for a CAPTCHA, and proceeds when the request says the end user
//     solved one (CaptchaSolved), so that a CAPTCHA stands in for tollgate
//     while it is down (no allowance: the CAPTCHA is the limit).
//   - Otherwise (tollgate refused the request or the token with a 4xx, or
//     the caller's context was canceled) the answer is closed whatever the
//     mode: FailCaptcha asks for a CAPTCHA even when one was solved, and
//     FailOpen and FailDelay delay. A broken request must show up in the
//     caller's log, not turn protection off.
//
// A fallback proceed carries no attempt token (report without one: it is
// counted on its own) and a fallback report no device token.
type FailMode uint8

// The fail modes. The zero FailMode is FailDelay.
const (
	// FailDelay answers delay: the end user gets 429 and tries again
	// shortly. It fails closed.
	FailDelay FailMode = iota
	// FailCaptcha answers captcha, or proceed for a solved one while
	// tollgate is unavailable. It fails closed behind a CAPTCHA.
	FailCaptcha
	// FailOpen answers proceed while tollgate is unavailable, so logins
	// go on, held to a safety net: each account (a send's destination) and
	// each client address gets a small allowance of such proceeds
	// (Config.FailOpenPerAccount, FailOpenPerAddress, FailOpenWindow), and
	// past it the call is answered as FailDelay would. A credential
	// stuffing run during an outage, or one that floods tollgate into
	// shedding, so gets a handful of guesses per account, not all of them.
	// Client.Stats counts both answers.
	FailOpen
)

// String returns "delay", "captcha" or "open".
func (m FailMode) String() string {
	switch m {
	case FailDelay:
		return "delay"
	case FailCaptcha:
		return "captcha"
	case FailOpen:
		return "open"
	}
	return "FailMode(" + strconv.Itoa(int(m)) + ")"
}

// ReasonFallback is the reason of every fallback Verdict, for the caller's
// logs; tollgate itself never answers it.
const ReasonFallback = "client_fallback"

// FallbackDelay is FailDelay's delay when tollgate asked for none.
const FallbackDelay = time.Second

// MaxFallbackDelay caps the Retry-After that FailDelay follows.
const MaxFallbackDelay = time.Minute

// Verdict is tollgate's verdict, or a call site's FailMode answer when
// tollgate gave none.
type Verdict struct {
	wire.Verdict
	// Fallback is true when tollgate gave no verdict and this is the
	// FailMode's answer; the call's error then says why. A FailOpen call
	// past its allowance is a Fallback delay whose Reasons are
	// ReasonFallback and ReasonFallbackAllowance: answer it as any delay.
	// It is not part of the wire form.
	Fallback bool `json:"-"`
}

// fallback is mode's answer to a call that failed with err; captchaSolved
// is the request's.
func fallback(mode FailMode, captchaSolved bool, err error) Verdict {
	if !errors.Is(err, ErrUnavailable) {
		// Refused or canceled: closed whatever the mode.
		captchaSolved = false
		if mode != FailCaptcha {
			mode = FailDelay
		}
	}
	v := Verdict{Fallback: true, Verdict: wire.Verdict{Reasons: []string{ReasonFallback}}}
	switch {
	case mode == FailOpen, mode == FailCaptcha && captchaSolved:
		v.Action = wire.ActionProceed
	case mode == FailCaptcha:
		v.Action = wire.ActionCaptcha
	default:
		d := FallbackDelay
		var e *Error
		if errors.As(err, &e) && e.RetryAfter > d {
			d = min(e.RetryAfter, MaxFallbackDelay)
		}
		v.Action = wire.ActionDelay
		v.DelayMS = d.Milliseconds()
		v.RetryAfter = int64((d + time.Second - 1) / time.Second)
	}
	return v
}
