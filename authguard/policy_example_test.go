package authguard_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/backoff"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
)

// A flow built from Go values: every field left zero is its default.
func ExampleNewPolicy() {
	login := &authguard.Flow{
		Name: "login",
		Rules: []authguard.Rule{{
			Name:      "account_backoff",
			Subject:   authguard.Subject{Parts: authguard.PartAccount},
			Algorithm: authguard.Backoff,
			Backoff:   backoff.Policy{Free: 3, Base: time.Second, Factor: 2, Max: time.Minute, ForgetAfter: time.Hour},
		}},
	}
	p, err := authguard.NewPolicy(login)
	if err != nil {
		fmt.Println(err)
		return
	}
	f := p.Flow("login")
	r := f.Rule("account_backoff")
	fmt.Println(f.Mode, f.FailMode, f.FailClosedRetry, f.AttemptTTL, f.DeviceTrust)
	fmt.Println(r.Counts, r.Past, r.Clients, r.Cost, r.Reason)

	// A mistake names the flow, the rule and the Go field.
	login.Rules[0].Cost = 2
	_, err = authguard.NewPolicy(login)
	var re *authguard.RuleError
	fmt.Println(errors.As(err, &re), err)
	_, err = authguard.NewPolicy(&authguard.Flow{Name: "login", AttemptTTL: time.Hour * 48})
	var fe *authguard.FieldError
	fmt.Println(errors.As(err, &fe), fe.Field, err)
	// Output:
	// enforce open 2s 10m0s login
	// failure delay unknown 1 account_backoff
	// true authguard: flow login, rule account_backoff: backoff counts one failure per attempt: cost must be 1
	// true AttemptTTL authguard: flow login: AttemptTTL: must be between 1s and 24h0m0s, not 48h0m0s
}

// Check before the password is checked, Report after: the fourth failure
// in a row waits.
func ExampleEngine_Check() {
	p, err := authguard.NewPolicy(&authguard.Flow{
		Name: "login",
		Rules: []authguard.Rule{{
			Name:      "account_backoff",
			Subject:   authguard.Subject{Parts: authguard.PartAccount},
			Algorithm: authguard.Backoff,
			Backoff:   backoff.Policy{Free: 3, Base: time.Second, Factor: 2, Max: time.Minute, ForgetAfter: time.Hour},
		}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	clock := testclock.New(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	e, err := authguard.New(authguard.Config{
		Policy: p,
		Store:  memstore.New(memstore.Config{Now: clock.Now}),
		Secret: []byte("example-secret-example-secret-32"),
		Now:    clock.Now,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	for range 4 {
		v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: "ann@example.com", IP: "192.0.2.1"})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(v.Action, v.Delay, v.Reasons)
		if v.Action == authguard.Proceed {
			// The password was wrong.
			if _, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: "ann@example.com", IP: "192.0.2.1", Outcome: authguard.Failure, Attempt: v.Attempt}); err != nil {
				fmt.Println(err)
				return
			}
		}
	}
	// Output:
	// proceed 0s []
	// proceed 0s []
	// proceed 0s []
	// delay 1s [account_backoff]
}

// A Flow of zero values is the same flow as one whose defaults are
// written out.
func TestNewPolicy_ZeroMeansTheDefault(t *testing.T) {
	zero := &authguard.Flow{Name: "api"}
	written := &authguard.Flow{
		Name: "api", Mode: authguard.Enforce, FailMode: authguard.FailOpen, DeviceTrust: "api",
		FailClosedRetry: authguard.DefaultFailClosedRetry, AttemptTTL: authguard.DefaultAttemptTTL, DeviceTokenTTL: authguard.DefaultDeviceTokenTTL,
	}
	for _, f := range []*authguard.Flow{zero, written} {
		if _, err := authguard.NewPolicy(f); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprintf("%+v", *zero) != fmt.Sprintf("%+v", *written) {
		t.Errorf("zero flow %+v\nwritten out %+v", *zero, *written)
	}
	send := &authguard.Flow{Name: "sms", Kind: authguard.Sends}
	if _, err := authguard.NewPolicy(send); err != nil || send.Send.PrefixDigits != authguard.DefaultPrefixDigits {
		t.Errorf("send flow: %v, prefix digits %d", err, send.Send.PrefixDigits)
	}
}

// Validation errors name Go fields, and errors.As finds them.
func TestNewPolicy_FieldErrors(t *testing.T) {
	rate := authguard.Rule{Name: "r", Subject: authguard.Subject{Parts: authguard.PartIP}, Algorithm: authguard.FixedWindow, Rate: authguard.RateLimit{Window: time.Minute, Limit: 5}}
	for _, tt := range []struct {
		flow        authguard.Flow
		rule, field string
	}{
		{authguard.Flow{Name: "Login"}, "", "Name"},
		{authguard.Flow{Name: "login", FailClosedRetry: time.Hour}, "", "FailClosedRetry"},
		{authguard.Flow{Name: "login", DeviceTrust: "X"}, "", "DeviceTrust"},
		{authguard.Flow{Name: "login", Send: authguard.SendPolicy{OwnerCodes: 1}}, "", "Send"},
		{authguard.Flow{Name: "sms", Kind: authguard.Sends, Send: authguard.SendPolicy{PrefixDigits: 9}}, "", "Send.PrefixDigits"},
		{authguard.Flow{Name: "sms", Kind: authguard.Sends, Send: authguard.SendPolicy{Prices: map[authguard.Channel]authguard.Prices{authguard.ChannelSMS: {Countries: map[string]int{"GB": -1}}}}}, "", "Send.Prices[sms].Countries[GB]"},
		{authguard.Flow{Name: "login", Rules: []authguard.Rule{func() authguard.Rule { r := rate; r.Cost = 6; return r }()}}, "r", "Cost"},
		{authguard.Flow{Name: "login", Rules: []authguard.Rule{func() authguard.Rule { r := rate; r.Key = "K"; return r }()}}, "r", "Key"},
		{authguard.Flow{Name: "login", Rules: []authguard.Rule{func() authguard.Rule { r := rate; r.Rate.Limit = 0; return r }()}}, "r", "Rate"},
	} {
		_, err := authguard.NewPolicy(&tt.flow)
		var fe *authguard.FieldError
		if !errors.As(err, &fe) || fe.Flow != tt.flow.Name || fe.Rule != tt.rule || fe.Field != tt.field {
			t.Errorf("%+v: %v, want a FieldError of rule %q, field %s", tt.flow, err, tt.rule, tt.field)
		}
	}
}
