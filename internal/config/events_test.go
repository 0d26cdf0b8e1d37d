package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
)

// TestConfig_BuiltInFlowsEmitTheirEvents: the built-in login flow tells of
// new devices and accounts under attack, the OTP send flow of pumping
// holds and budgets; otp_verify, whose devices are not sign-ins, tells of
// no new device.
func TestConfig_BuiltInFlowsEmitTheirEvents(t *testing.T) {
	p := DefaultPolicy()
	tests := []struct {
		flow string
		typ  string
		want bool
	}{
		{"login", authguard.NoticeNewDevice, true},
		{"login", authguard.NoticeUnderAttack, true},
		{"login", authguard.NoticeReset, true},
		{"login", authguard.NoticeIPEscalated, true},
		{"login", authguard.NoticeStoreDegraded, true},
		{"login", authguard.NoticeBudget, false},
		{"otp_verify", authguard.NoticeNewDevice, false},
		{"otp_verify", authguard.NoticeUnderAttack, true},
		{"otp_send", authguard.NoticePumpingHold, true},
		{"otp_send", authguard.NoticeBudget, true},
		{"otp_send", authguard.NoticeStoreRecovered, true},
		{"otp_send", authguard.NoticeNewDevice, false},
	}
	for _, tt := range tests {
		if got := p.Flow(tt.flow).Notices.Emits(tt.typ); got != tt.want {
			t.Errorf("%s emits %s = %v, want %v", tt.flow, tt.typ, got, tt.want)
		}
	}
	if got := p.Flow("login").Notices.Window; got != time.Hour {
		t.Errorf("login's events window = %v, want 1h", got)
	}
}

// TestConfig_AMisspelledEventIsRefusedWithASuggestion: an event name the
// engine does not know would silently emit nothing; it is an error at its
// line that names the closest event.
func TestConfig_AMisspelledEventIsRefusedWithASuggestion(t *testing.T) {
	_, err := LoadPolicy([]byte("flows:\n  login:\n    events:\n      emit: [account.under_atack]\n"))
	var e *Error
	if !errors.As(err, &e) || e.Line != 4 || e.Path != "flows.login.events.emit" || !strings.Contains(err.Error(), `did you mean "account.under_attack"?`) {
		t.Fatalf("LoadPolicy = %v, want an error at line 4 of flows.login.events.emit suggesting account.under_attack", err)
	}
}

// TestConfig_AnEventsChangeKeepsWhatItDoesNotSay: a file that changes the
// window keeps the flow's emit list; an emit list replaces the flow's
// whole, and an empty one switches every notice off.
func TestConfig_AnEventsChangeKeepsWhatItDoesNotSay(t *testing.T) {
	p, err := LoadPolicy([]byte("flows:\n  login:\n    events: {window: 10m, under_attack_failures: 50}\n  otp_verify:\n    events: {emit: []}\n  otp_send:\n    events: {emit: [otp.budget]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	login := p.Flow("login").Notices
	if !login.Emits(authguard.NoticeNewDevice) || login.Window != 10*time.Minute || login.UnderAttackFailures != 50 {
		t.Errorf("login's notices = %+v, want the built-in emit list with a 10m window and 50 failures", login)
	}
	for _, typ := range authguard.NoticeTypes {
		if p.Flow("otp_verify").Notices.Emits(typ) {
			t.Errorf("otp_verify with emit: [] emits %s", typ)
		}
	}
	send := p.Flow("otp_send").Notices
	if !send.Emits(authguard.NoticeBudget) || send.Emits(authguard.NoticePumpingHold) {
		t.Errorf("otp_send's notices = %+v, want otp.budget alone", send)
	}
}
