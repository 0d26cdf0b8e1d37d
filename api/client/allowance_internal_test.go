package client

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/api/wire"
)

// The allowance keeps no identifier: its tables are keyed by 128 bits of
// an HMAC under a key made for each Client, so one process's keys say
// nothing about another's, and no key holds the account's bytes.
func TestAllowance_KeysAreKeyedHashesNotIdentifiers(t *testing.T) {
	a, err := newAllowance(Config{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := newAllowance(Config{})
	const account = "alice@example.com"
	k := a.key(kindAccount, "login", account)
	if k != a.key(kindAccount, "login", account) {
		t.Error("one Client keys one account two ways")
	}
	if k == b.key(kindAccount, "login", account) {
		t.Error("two Clients key an account alike: the HMAC key is not random")
	}
	for _, other := range []bucketKey{
		a.key(kindDestination, "login", account), a.key(kindAddress, "login", account),
		a.key(kindAccount, "otp_verify", account), a.key(kindAccount, "login", account+"x"),
		a.key(kindAccount, "login"+account[:1], account[1:]), // the zero byte separates flow and value
	} {
		if other == k {
			t.Errorf("two subjects share the key %x", k)
		}
	}
	if bytes.Contains(k[:], []byte("alice")) {
		t.Errorf("the key %x holds the account", k)
	}
	if got := reflect.TypeFor[map[bucketKey]*bucket]().Key(); got.Kind() != reflect.Array || got.Len() != 16 {
		t.Errorf("the tables are keyed by %v, want [16]byte", got)
	}
	a.take(time.Unix(0, 0), checkSubject(wire.CheckRequest{Flow: "login", Account: account, IP: "203.0.113.7"}))
	for key := range a.accounts.byKey {
		if key != k {
			t.Errorf("the account table holds %x, want the HMAC %x", key, k)
		}
	}
}

// The forms hashed: addresses by what one subscriber holds, accounts and
// destinations folded so that respelling gets no fresh allowance.
func TestAllowance_SubjectForms(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"IPv4", addressKey("192.0.2.7"), "192.0.2.7"},
		{"IPv4-mapped IPv6 is its IPv4", addressKey("::ffff:192.0.2.7"), "192.0.2.7"},
		{"IPv6 by its /64", addressKey("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64"},
		{"IPv6 with a zone", addressKey("fe80::1%eth0"), "fe80::/64"},
		{"not an address", addressKey("nope"), "?nope"},
		{"account: case and white space", checkSubject(wire.CheckRequest{Account: "  Alice@Example.COM \t"}).account, "alice@example.com"},
		{"account: inner white space collapsed", checkSubject(wire.CheckRequest{Account: "Jane \u00a0 Doe"}).account, "jane doe"},
		{"phone by its digits", sendSubject(wire.SendRequest{Destination: "+44 (0)7400-123 456", Channel: wire.ChannelSMS}).account, "p:4407400123456"},
		{"e-mail folded", sendSubject(wire.SendRequest{Destination: "Alice@Example.com", Channel: wire.ChannelEmail}).account, "e:alice@example.com"},
		{"a send's default flow", sendSubject(wire.SendRequest{}).flow, wire.DefaultSendFlow},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}
