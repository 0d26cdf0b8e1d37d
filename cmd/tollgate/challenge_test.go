package main

import (
	"strconv"
	"testing"

	"github.com/tollgate-auth/tollgate/challenge"
	"github.com/tollgate-auth/tollgate/internal/testkit/redistest"
)

// solveIssued finds the nonce of an issued challenge's answer, as the
// browser's solver does.
func solveIssued(t *testing.T, issued map[string]any) string {
	t.Helper()
	token, _ := issued["token"].(string)
	bits, _ := issued["difficulty"].(float64)
	for n := uint64(0); n < 1<<28; n++ {
		if challenge.LeadingZeroBits(challenge.WorkHash(token, n)) >= int(bits) {
			return strconv.FormatUint(n, 10)
		}
	}
	t.Fatal("no nonce")
	return ""
}

// TestChallenge_ARealServerIssuesOutOfTheBox: with no challenge section at
// all, the server issues the built-in proof of work at the default
// difficulty and verifies its solution once.
func TestChallenge_ARealServerIssuesOutOfTheBox(t *testing.T) {
	p := startTollgate(t, "TOLLGATE_SECRET=challenge-test-secret-of-at-least-32-bytes")
	base := "http://" + p.addr
	issued := call(t, base, "/v1/challenge", map[string]any{})
	if issued["kind"] != "pow" || issued["difficulty"] != float64(challenge.DefaultDifficulty) {
		t.Fatalf("issued %v", issued)
	}
	sol := map[string]any{"token": issued["token"], "nonce": solveIssued(t, issued)}
	if got := call(t, base, "/v1/challenge/verify", sol); got["solved"] != true {
		t.Fatalf("verify: %v", got)
	}
	if got := call(t, base, "/v1/challenge/verify", sol); got["solved"] != false || got["reason"] != "replayed" {
		t.Fatalf("verify again: %v, want replayed", got)
	}
}

// TestChallenge_TwoInstancesOnRedisSpendAChallengeOnce: a challenge issued
// by one instance is verified by the other, then refused by both.
func TestChallenge_TwoInstancesOnRedisSpendAChallengeOnce(t *testing.T) {
	rs := redistest.Server(t)
	env := []string{"TOLLGATE_SECRET=challenge-test-secret-of-at-least-32-bytes", "TOLLGATE_REDIS_URL=redis://" + rs.Addr}
	a, b := startTollgate(t, env...), startTollgate(t, env...)
	issued := call(t, "http://"+a.addr, "/v1/challenge", map[string]any{})
	sol := map[string]any{"token": issued["token"], "nonce": solveIssued(t, issued)}
	if got := call(t, "http://"+b.addr, "/v1/challenge/verify", sol); got["solved"] != true {
		t.Fatalf("on b: %v", got)
	}
	for _, p := range []*process{a, b} {
		if got := call(t, "http://"+p.addr, "/v1/challenge/verify", sol); got["solved"] != false || got["reason"] != "replayed" {
			t.Fatalf("again: %v, want replayed", got)
		}
	}
}
