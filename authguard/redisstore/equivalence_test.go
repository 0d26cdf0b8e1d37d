package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/builtinpolicy"
	"github.com/tollgate-auth/tollgate/internal/policyfile"
	"github.com/tollgate-auth/tollgate/internal/testkit/storetest"
	"github.com/tollgate-auth/tollgate/internal/testkit/testclock"
	"github.com/tollgate-auth/tollgate/spraydetect"
)

// TestEngine_RedisAnswersAsTheMemoryStore runs the same random calls —
// checks with and without device tokens and solved CAPTCHAs, failure and
// success reports with and without attempt tokens, on the built-in login
// and on a flow of rate rules that count proceeds — through one engine on
// the memory store and one on Redis (one node: a check is one script that
// undoes itself; a Cluster: pipelines), on one virtual clock, and requires
// the same verdict from both every time.
func TestEngine_RedisAnswersAsTheMemoryStore(t *testing.T) {
	for _, kind := range []string{"single", "generic", "cluster", "subject", "cluster-shared", "subject-shared"} {
		t.Run(kind, func(t *testing.T) {
			c := clientOf(t, kind)
			p, err := policyfile.LoadPolicy([]byte(`
flows:
  api:
    rules:
      - {name: quota, subject: account, algorithm: fixed_window, window: 1m, limit: 3, counts: proceed, past: captcha}
      - {name: shaped, subject: ip, algorithm: leaky_bucket, limit: 3, rate: 2/s, counts: proceed}
      - {name: per_pair, subject: account+ip, algorithm: sliding_log, window: 30s, limit: 2, counts: proceed}
`))
			if err != nil {
				t.Fatal(err)
			}
			clock := testclock.New(time.Time{})
			engines, rs := memoryAndRedis(t, c, p, clock)
			generic(kind, rs)
			ctx := context.Background()
			var accounts []string
			for i := range 15 {
				accounts = append(accounts, fmt.Sprint("user", i))
			}
			ips := []string{"192.0.2.1", "192.0.2.2", "2001:db8::1"}
			devices := [2]map[string]string{{}, {}} // per engine: account -> its device token
			rng := rand.New(rand.NewPCG(7, 9))
			actions := map[authguard.Action]int{}
			for step := range 600 {
				clock.Advance(time.Duration(rng.IntN(20)) * time.Second)
				flow := []string{"login", "login", "api"}[rng.IntN(3)]
				acct, ip := accounts[rng.IntN(len(accounts))], ips[rng.IntN(len(ips))]
				useDevice, solved := rng.IntN(3) == 0, rng.IntN(4) == 0
				outcome := []authguard.Outcome{authguard.Failure, authguard.Failure, authguard.Success}[rng.IntN(3)]
				report, tokenless := rng.IntN(2) == 0, rng.IntN(5) == 0
				var got [2]string
				for i, e := range engines {
					device := ""
					if useDevice {
						device = devices[i][acct]
					}
					v, err := e.Check(ctx, authguard.CheckRequest{Flow: flow, Account: acct, IP: ip, DeviceToken: device, CaptchaSolved: solved})
					if err != nil {
						t.Fatal(err)
					}
					got[i] = fmt.Sprint(v.Action, v.Delay, v.Reasons)
					if i == 0 {
						actions[v.Action]++
					}
					if report && v.Action == authguard.Proceed {
						attempt := v.Attempt
						if tokenless {
							attempt = ""
						}
						r, err := e.Report(ctx, authguard.ReportRequest{Flow: flow, Account: acct, IP: ip, Outcome: outcome, Attempt: attempt, DeviceToken: device})
						if err != nil {
							t.Fatal(err)
						}
						got[i] += fmt.Sprint(" / ", r.Action, r.Delay, r.Reasons)
						if r.DeviceToken != "" && flow == "login" {
							devices[i][acct] = r.DeviceToken
						}
					}
				}
				if got[0] != got[1] {
					t.Fatalf("step %d (%s %s from %s, device %v, solved %v): memory %q, Redis %q", step, flow, acct, ip, useDevice, solved, got[0], got[1])
				}
			}
			t.Logf("checks answered: %v", actions)
			// On a Cluster, checks expected to be refused peek instead of
			// reserving (hints.go), with the same verdicts (a wrong hint:
			// TestCluster_AWrongHintCostsARoundTripNotAVerdict).
			if sent, wrong := rs.Hinted(); onCluster(kind) {
				t.Logf("checks sent on a hint: %d, %d of them wrong", sent, wrong)
				if sent < 20 {
					t.Errorf("%d checks sent on a hint: the sequence must exercise them", sent)
				}
			}
			for _, a := range []authguard.Action{authguard.Proceed, authguard.Delay, authguard.Captcha} {
				if actions[a] < 20 {
					t.Errorf("only %d checks answered %v: the sequence must exercise every verdict", actions[a], a)
				}
			}
			if !slices.Equal(devicesKeys(devices[0]), devicesKeys(devices[1])) {
				t.Errorf("device tokens issued to %v on memory, %v on Redis", devicesKeys(devices[0]), devicesKeys(devices[1]))
			}
		})
	}
}

// clientOf is a client of a real Redis: "single" (or "generic", the same
// with generic scripts), "cluster", or "subject": a Cluster whose stores
// (newStore, memoryAndRedis) keep subject hash tags (Config.SubjectTags).
//
// "cluster-shared" and "subject-shared" are "cluster" and "subject" whose
// stores send every call in shared round trips (Config.SharedRoundTrips,
// redisstore.ShareEveryCall), as under load.
func clientOf(t *testing.T, kind string) redis.UniversalClient {
	switch kind {
	case "single", "generic":
		return singleClient(t)
	case "subject", "subject-shared":
		c := clusterClient(t)
		subjectTagged.Store(c, true)
		t.Cleanup(func() { subjectTagged.Delete(c) })
		if kind == "subject-shared" {
			sharedAlways.Store(c, true)
			t.Cleanup(func() { sharedAlways.Delete(c) })
		}
		return c
	case "cluster-shared":
		c := clusterClient(t)
		sharedAlways.Store(c, true)
		t.Cleanup(func() { sharedAlways.Delete(c) })
		return c
	}
	return clusterClient(t)
}

// subjectTagged holds the clients clientOf made for "subject" and
// "subject-shared", sharedAlways those for the "-shared" kinds.
var subjectTagged, sharedAlways sync.Map

// onCluster reports whether kind is a Cluster's.
func onCluster(kind string) bool { return kind != "single" && kind != "generic" }

// storeConfig is the Config of a store on c as clientOf's kind asks.
func storeConfig(c redis.UniversalClient, now func() time.Time, timeout time.Duration) redisstore.Config {
	_, shared := sharedAlways.Load(c)
	return redisstore.Config{Client: c, Now: now, Timeout: timeout, SubjectTags: tagsOf(c), SharedRoundTrips: shared}
}

// shareAlways makes rs send every call shared when c is a "-shared" kind's.
func shareAlways(c redis.UniversalClient, rs *redisstore.Store) {
	if _, ok := sharedAlways.Load(c); ok {
		redisstore.ShareEveryCall(rs)
	}
}

// tagsOf reports whether stores on c keep subject hash tags.
func tagsOf(c redis.UniversalClient) bool {
	_, ok := subjectTagged.Load(c)
	return ok
}

// generic makes rs send every check with the generic check script when
// kind is "generic": one node, no shapes (shape.go), so that the equivalence
// tests hold the shaped and the generic script to the same answers.
func generic(kind string, rs *redisstore.Store) {
	if kind == "generic" {
		redisstore.SetMaxShapes(rs, 0)
	}
}

// memoryAndRedis returns two engines of policy p on one clock: one on a
// memory store, one on Redis through c.
func memoryAndRedis(t *testing.T, c redis.UniversalClient, p *authguard.Policy, clock *testclock.Clock) ([]*authguard.Engine, *redisstore.Store) {
	t.Helper()
	rs, err := redisstore.New(storeConfig(c, clock.Now, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	shareAlways(c, rs)
	engines := make([]*authguard.Engine, 2)
	for i, st := range []authguard.Store{memstore.New(memstore.Config{Now: clock.Now}), rs} {
		if engines[i], err = authguard.New(authguard.Config{Policy: p, Store: st, Secret: secret, Now: clock.Now}); err != nil {
			t.Fatal(err)
		}
	}
	return engines, rs
}

func devicesKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// TestSend_RedisAnswersAsTheMemoryStore does for sends what
// TestEngine_RedisAnswersAsTheMemoryStore does for checks: random sends to
// a few numbers of two blocks, a premium-rate number and an e-mail, from a
// few addresses, with and without a solved CAPTCHA, on the built-in
// otp_send and on a send flow whose rules deny and judge conversion, and
// verifications of codes that credit conversion, through a memory-store
// engine and a Redis engine on one clock: the same verdict every time.
func TestSend_RedisAnswersAsTheMemoryStore(t *testing.T) {
	for _, kind := range []string{"single", "generic", "cluster", "subject", "cluster-shared", "subject-shared"} {
		t.Run(kind, func(t *testing.T) {
			c := clientOf(t, kind)
			p, err := policyfile.LoadPolicy([]byte(`
flows:
  budget:
    kind: send
    rules:
      - {name: per_country, subject: country, algorithm: fixed_window, window: 1m, limit: 6, counts: proceed, past: deny}
      - {name: per_block, subject: destination_prefix, algorithm: distinct, of: destination, windows: [{window: 5m, limit: 1}], past: captcha}
      - {name: per_ip, subject: ip, algorithm: token_bucket, limit: 3, rate: 1/s, counts: proceed}
      - {name: converts, subject: destination_prefix, algorithm: conversion, window: 2m, min_volume: 3, min_conversion: 80}
  checks:
    template: otp_verify
    verifies: budget
`))
			if err != nil {
				t.Fatal(err)
			}
			clock := testclock.New(time.Time{})
			engines, rs := memoryAndRedis(t, c, p, clock)
			generic(kind, rs)
			dests := []struct{ d, ch string }{
				{"+44 7400 123001", "sms"}, {"+44 7400 123002", "sms"}, {"+44 7400 123003", "voice"},
				{"+44 7400 555001", "sms"}, {"+44 7400 555002", "whatsapp"}, {"+449012345678", "voice"},
				{"ann@example.com", "email"},
			}
			ips := []string{"192.0.2.1", "192.0.2.2", "2001:db8::1"}
			rng := rand.New(rand.NewPCG(11, 13))
			actions := map[authguard.Action]int{}
			lowConversion := 0
			ctx := context.Background()
			for step := range 600 {
				clock.Advance(time.Duration(rng.IntN(15)) * time.Second)
				flow := []string{"otp_send", "budget"}[rng.IntN(2)]
				d := dests[rng.IntN(len(dests))]
				if rng.IntN(8) == 0 { // a code verified: check and success report naming the destination
					vflow := map[string]string{"otp_send": "otp_verify", "budget": "checks"}[flow]
					var got [2]string
					for i, e := range engines {
						v, err := e.Check(ctx, authguard.CheckRequest{Flow: vflow, Account: d.d, IP: "192.0.2.9"})
						if err != nil {
							t.Fatal(err)
						}
						r, err := e.Report(ctx, authguard.ReportRequest{Flow: vflow, Account: d.d, IP: "192.0.2.9", Outcome: authguard.Success,
							Attempt: v.Attempt, Destination: d.d, Channel: d.ch})
						if err != nil {
							t.Fatal(err)
						}
						got[i] = fmt.Sprint(v.Action, v.Reasons, " / ", r.Action, r.Reasons)
					}
					if got[0] != got[1] {
						t.Fatalf("step %d (verify %s on %s): memory %q, Redis %q", step, d.d, vflow, got[0], got[1])
					}
					continue
				}
				req := authguard.SendRequest{Flow: flow, Destination: d.d, Channel: d.ch, IP: ips[rng.IntN(len(ips))], CaptchaSolved: rng.IntN(4) == 0}
				var got [2]string
				for i, e := range engines {
					v, err := e.Send(ctx, req)
					if err != nil {
						t.Fatal(err)
					}
					got[i] = fmt.Sprint(v.Action, v.Delay, v.Reasons)
					if i == 0 {
						actions[v.Action]++
						if slices.Contains(v.Reasons, "converts") || slices.Contains(v.Reasons, "low_conversion") {
							lowConversion++
						}
					}
				}
				if got[0] != got[1] {
					t.Fatalf("step %d (%+v): memory %q, Redis %q", step, req, got[0], got[1])
				}
			}
			t.Logf("sends answered: %v (low_conversion among them: %d)", actions, lowConversion)
			if lowConversion < 10 {
				t.Errorf("only %d sends held for low conversion: the sequence must exercise it", lowConversion)
			}
			for _, a := range []authguard.Action{authguard.Proceed, authguard.Delay, authguard.Captcha, authguard.Deny} {
				if actions[a] < 15 {
					t.Errorf("only %d sends answered %v: the sequence must exercise every verdict", actions[a], a)
				}
			}
		})
	}
}

// TestReset_DeletesAnAccountsKeysOnRedisAndCluster: an administrator's
// reset of one account deletes its keys on every node (SCAN, one UNLINK per
// key, so a Cluster's slots do not matter) and leaves another account's.
func TestReset_DeletesAnAccountsKeysOnRedisAndCluster(t *testing.T) {
	for _, kind := range []string{"single", "cluster", "subject", "cluster-shared", "subject-shared"} {
		t.Run(kind, func(t *testing.T) {
			c := clientOf(t, kind)
			s := newStore(t, c, nil)
			e, err := authguard.New(authguard.Config{Policy: builtinpolicy.Policy(), Store: s, Secret: secret})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for _, acct := range []string{"ann@example.com", "bob@example.com"} {
				for i := range 6 {
					if _, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: acct, IP: fmt.Sprintf("192.0.2.%d", i), Outcome: authguard.Failure}); err != nil {
						t.Fatal(err)
					}
				}
			}
			n, err := e.Reset(ctx, authguard.ResetRequest{Flow: "login", Account: "ann@example.com", Reason: "test"})
			if err != nil || n < 1 {
				t.Fatalf("reset: %d keys, %v", n, err)
			}
			for acct, want := range map[string]authguard.Action{"ann@example.com": authguard.Proceed, "bob@example.com": authguard.Delay} {
				v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: acct, IP: "198.51.100.1"})
				if err != nil || v.Action != want {
					t.Errorf("%s after ann's reset: %v %v, want %v", acct, v.Action, err, want)
				}
			}
		})
	}
}

// TestSend_TheOwnersCodesOnRedisAnswerAsOnTheMemoryStore: the owner's
// allowance (otp_send's owner_codes) on Redis, one node (check.lua's
// verified gate) and a Cluster (authguard.Blocked): a bomber's sends to a
// number interleaved with its owner's, with her login device token and her
// number verified once, and with a token of an account that never verified
// it, give the same verdicts as on the memory store, and the owner gets
// codes the bomber's quota would have refused.
func TestSend_TheOwnersCodesOnRedisAnswerAsOnTheMemoryStore(t *testing.T) {
	const number = "+44 7400 123456"
	for _, kind := range []string{"single", "generic", "cluster", "subject", "cluster-shared", "subject-shared"} {
		t.Run(kind, func(t *testing.T) {
			clock := testclock.New(time.Time{})
			engines, rs := memoryAndRedis(t, clientOf(t, kind), builtinpolicy.Policy(), clock)
			generic(kind, rs)
			ctx := context.Background()
			login := func(e *authguard.Engine, account string) string {
				v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: account, IP: "203.0.113.7"})
				if err != nil {
					t.Fatal(err)
				}
				r, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: account, IP: "203.0.113.7", Outcome: authguard.Success, Attempt: v.Attempt})
				if err != nil {
					t.Fatal(err)
				}
				return r.DeviceToken
			}
			var owner, stranger [2]string
			for i, e := range engines {
				owner[i], stranger[i] = login(e, "owner@example.com"), login(e, "stranger@example.com")
				v, _ := e.Check(ctx, authguard.CheckRequest{Flow: "otp_verify", Account: "owner@example.com", IP: "203.0.113.7"})
				e.Report(ctx, authguard.ReportRequest{Flow: "otp_verify", Account: "owner@example.com", IP: "203.0.113.7", Outcome: authguard.Success,
					Attempt: v.Attempt, Destination: number, Channel: "sms"})
			}
			rng := rand.New(rand.NewPCG(21, 23))
			ownerPast := 0 // the owner's codes while the bomber's were refused
			for step := range 400 {
				clock.Advance(time.Duration(rng.IntN(90)) * time.Second)
				who := rng.IntN(5) // 0, 1: the bomber; 2: the owner; 3: a stranger's token; 4: the owner's account without a token
				var got, probe [2]string
				var ownerSent, bomberRefused bool
				for i, e := range engines {
					req := authguard.SendRequest{Destination: number, Channel: "sms", IP: fmt.Sprintf("198.51.100.%d", step%200)}
					switch who {
					case 2:
						req.Account, req.DeviceToken, req.IP = "owner@example.com", owner[i], "203.0.113.7"
					case 3:
						req.Account, req.DeviceToken = "stranger@example.com", stranger[i]
					case 4:
						req.Account, req.CaptchaSolved = "owner@example.com", step%2 == 0
					}
					v, err := e.Send(ctx, req)
					if err != nil {
						t.Fatal(err)
					}
					got[i] = fmt.Sprint(v.Action, v.Delay, v.Reasons)
					if who != 2 {
						continue
					}
					// The bomber, at the same instant as the owner.
					b, err := e.Send(ctx, authguard.SendRequest{Destination: number, Channel: "sms", IP: "198.51.100.250"})
					if err != nil {
						t.Fatal(err)
					}
					probe[i] = fmt.Sprint(b.Action, b.Delay, b.Reasons)
					ownerSent, bomberRefused = v.Action == authguard.Proceed, b.Action != authguard.Proceed
				}
				if got[0] != got[1] || probe[0] != probe[1] {
					t.Fatalf("step %d (sender %d): memory %s then %s, Redis %s then %s", step, who, got[0], probe[0], got[1], probe[1])
				}
				if ownerSent && bomberRefused {
					ownerPast++
				}
			}
			t.Logf("the owner got %d codes at moments the bomber's were refused", ownerPast)
			if ownerPast == 0 {
				t.Error("the owner never got a code the bomber could not: the run shows nothing of her allowance")
			}
		})
	}
}

// TestCheckScript_TheVerifiedGateDecidesAsBlocked: on one node check.lua
// decides whether a check is blocked (and undoes it in place) as
// authguard.Blocked does: a delay on a shared op holds the send back unless
// the allowance is within its limit and the verified record is there.
func TestCheckScript_TheVerifiedGateDecidesAsBlocked(t *testing.T) {
	c := singleClient(t)
	clock := testclock.New(time.Time{})
	s := newStore(t, c, clock.Now)
	ctx := context.Background()
	year := spraydetect.Windows{{Length: 365 * 24 * time.Hour, Limit: 1}}
	waiting := &authguard.BackoffOp{Key: "tg:t:s:dst:d", Action: authguard.BackoffFail, Policy: storetest.Backoff}
	for range 3 { // past free: the counter's next attempt waits
		if _, err := s.Do(ctx, []authguard.Op{waiting}); err != nil {
			t.Fatal(err)
		}
	}
	for _, recorded := range []bool{false, true} {
		if recorded {
			if _, err := s.Do(ctx, []authguard.Op{&authguard.LogOp{Key: "tg:t:s:vdst:a.d", Action: authguard.LogAdd, Member: "v", Windows: year}}); err != nil {
				t.Fatal(err)
			}
		}
		ops := []authguard.Op{
			&authguard.BackoffOp{Key: "tg:t:s:dst:d", Action: authguard.BackoffCharge, Policy: storetest.Backoff},
			&authguard.LogOp{Key: "tg:t:s:vdst:a.d", Action: authguard.LogPeek, Member: "?", Windows: year},
			&authguard.LogOp{Key: "tg:t:s:vdst.own:a.d", Action: authguard.LogAdmit, Member: fmt.Sprint("send-", recorded), Windows: spraydetect.Windows{{Length: time.Hour, Limit: 3}}},
		}
		gates := []authguard.Gate{{Block: authguard.BlockShared, Undo: true}, {Block: authguard.BlockVerified}, {Block: authguard.BlockOwner, Undo: true}}
		res, undone, err := s.DoCheck(ctx, ops, gates, false)
		if err != nil {
			t.Fatal(err)
		}
		if want := authguard.Blocked(gates, res, false); undone != want {
			t.Errorf("recorded %v: the script undid %v, Blocked says %v (results %+v)", recorded, undone, want, res)
		}
		if undone == recorded {
			t.Errorf("recorded %v: undone %v, want the send held back exactly when the destination is not verified", recorded, undone)
		}
		// A send that needed no exemption spends none of the allowance
		// (authguard.Finish), in the script as in Reserve on the memory
		// store.
		if !undone {
			own := &authguard.LogOp{Key: "tg:t:s:vdst.own:a.d", Action: authguard.LogPeek, Member: "?", Windows: spraydetect.Windows{{Length: time.Hour, Limit: 3}}}
			mem := memstore.New(memstore.Config{})
			for _, st := range []authguard.Store{s, mem} {
				free := []authguard.Op{&authguard.BackoffOp{Key: "tg:t:s:dst:free", Action: authguard.BackoffCharge, Policy: storetest.Backoff}, ops[1],
					&authguard.LogOp{Key: "tg:t:s:vdst.own:a.d", Action: authguard.LogAdmit, Member: "free-send", Windows: spraydetect.Windows{{Length: time.Hour, Limit: 3}}}}
				if st == authguard.Store(mem) {
					// the verified record, as the script's store has it
					if _, err := mem.Do(ctx, []authguard.Op{&authguard.LogOp{Key: "tg:t:s:vdst:a.d", Action: authguard.LogAdd, Member: "v", Windows: year}}); err != nil {
						t.Fatal(err)
					}
				}
				before, _ := st.Do(ctx, []authguard.Op{own})
				if _, _, err := authguard.Reserve(ctx, st, free, gates, false); err != nil {
					t.Fatal(err)
				}
				after, _ := st.Do(ctx, []authguard.Op{own})
				if before[0].Count != after[0].Count {
					t.Errorf("%T: a send held back by nothing: the allowance went from %d to %d codes, want it unchanged", st, before[0].Count, after[0].Count)
				}
			}
		}
		// Without a device the allowance also takes a solved CAPTCHA.
		for _, solved := range []bool{false, true} {
			ops[2] = &authguard.LogOp{Key: "tg:t:s:vdst.cap:a.d", Action: authguard.LogAdmit, Member: fmt.Sprint("send-", recorded, solved), Windows: spraydetect.Windows{{Length: time.Hour, Limit: 3}}}
			gates[2] = authguard.Gate{Block: authguard.BlockAllowanceSolved, Undo: true}
			res, undone, err := s.DoCheck(ctx, ops, gates, solved)
			if err != nil {
				t.Fatal(err)
			}
			if want := authguard.Blocked(gates, res, solved); undone != want || undone == (recorded && solved) {
				t.Errorf("recorded %v, solved %v: the script undid %v, Blocked says %v; want held back unless both", recorded, solved, undone, want)
			}
		}
	}
}

// TestStepUp_RedisAnswersAsTheMemoryStore runs random calls of a stuffing
// run through one engine on the memory store and one on Redis (one node,
// generic scripts, a Cluster), on one virtual clock: login checks with and
// without device tokens and solved CAPTCHAs, failure and success reports
// with and without breached passwords (the credential_stuffing rule, the
// step-up reasons), bursts of step_up checks sent at once, and
// step_up_failed and step_up_passed reports with each engine's own ticket,
// most carrying their check's attempt token. The verdicts must be the same
// every time, and the device tokens issued to the same accounts.
func TestStepUp_RedisAnswersAsTheMemoryStore(t *testing.T) {
	for _, kind := range []string{"single", "generic", "cluster", "subject", "cluster-shared", "subject-shared"} {
		t.Run(kind, func(t *testing.T) {
			c := clientOf(t, kind)
			clock := testclock.New(time.Time{})
			engines, rs := memoryAndRedis(t, c, builtinpolicy.Policy(), clock)
			generic(kind, rs)
			ctx := context.Background()
			var accounts []string
			for i := range 12 {
				accounts = append(accounts, fmt.Sprint("user", i))
			}
			ips := []string{"192.0.2.1", "192.0.2.2", "2001:db8::1"}
			devices := [2]map[string]string{{}, {}} // per engine: account -> its device token
			tickets := [2]map[string]string{{}, {}} // per engine: account -> its latest ticket
			rng := rand.New(rand.NewPCG(11, 13))
			actions := map[authguard.Action]int{}
			for step := range 800 {
				clock.Advance(time.Duration(rng.IntN(20)) * time.Second)
				acct, ip := accounts[rng.IntN(len(accounts))], ips[rng.IntN(len(ips))]
				useDevice, solved, breached := rng.IntN(3) == 0, rng.IntN(3) == 0, rng.IntN(2) == 0
				secondFactor := rng.IntN(4) == 0
				outcome := []authguard.Outcome{authguard.Failure, authguard.Failure, authguard.Success}[rng.IntN(3)]
				pass := rng.IntN(3) == 0
				// Second-factor tries come in bursts sent at once (every
				// check before any report), most reported with their check's
				// attempt token after the ticket, some with the ticket alone.
				burst, carry := 1+rng.IntN(4), rng.IntN(4) != 0
				var got [2]string
				for i, e := range engines {
					device := ""
					if useDevice {
						device = devices[i][acct]
					}
					if secondFactor {
						var tries []authguard.Verdict
						for range burst {
							v, err := e.Check(ctx, authguard.CheckRequest{Flow: "step_up", Account: acct, IP: ip})
							if err != nil {
								t.Fatal(err)
							}
							got[i] += fmt.Sprint("step_up ", v.Action, v.Delay, v.Reasons, "; ")
							tries = append(tries, v)
						}
						ticket := tickets[i][acct]
						for _, v := range tries {
							if v.Action != authguard.Proceed || ticket == "" {
								continue
							}
							out := authguard.StepUpFailed
							if pass {
								out = authguard.StepUpPassed
							}
							attempt := ticket
							if carry {
								attempt += authguard.StepUpAttemptSeparator + v.Attempt
							}
							r, err := e.Report(ctx, authguard.ReportRequest{Flow: "step_up", Account: acct, IP: ip, Outcome: out, Attempt: attempt, DeviceToken: device})
							if err != nil {
								// An expired ticket is refused alike on both.
								got[i] += fmt.Sprint(" / refused ", errors.Is(err, authguard.ErrInvalidInput))
								continue
							}
							got[i] += fmt.Sprint(" / ", r.Action, r.Delay, r.Reasons, r.DeviceToken != "")
							if r.DeviceToken != "" {
								devices[i][acct] = r.DeviceToken
							}
						}
						continue
					}
					v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: acct, IP: ip, DeviceToken: device, CaptchaSolved: solved})
					if err != nil {
						t.Fatal(err)
					}
					got[i] = fmt.Sprint(v.Action, v.Delay, v.Reasons)
					if v.Action != authguard.Proceed {
						continue
					}
					r, err := e.Report(ctx, authguard.ReportRequest{Flow: "login", Account: acct, IP: ip, Outcome: outcome, Attempt: v.Attempt, DeviceToken: device, Breached: breached})
					if err != nil {
						t.Fatal(err)
					}
					got[i] += fmt.Sprint(" / ", r.Action, r.Delay, r.Reasons, r.DeviceToken != "")
					if i == 0 {
						actions[r.Action]++
					}
					switch {
					case r.Action == authguard.StepUp:
						tickets[i][acct] = r.Attempt
					case r.DeviceToken != "":
						devices[i][acct] = r.DeviceToken
					}
				}
				if got[0] != got[1] {
					t.Fatalf("step %d (%s from %s, device %v, solved %v, breached %v, second factor %v): memory %q, Redis %q",
						step, acct, ip, useDevice, solved, breached, secondFactor, got[0], got[1])
				}
			}
			t.Logf("reports answered: %v", actions)
			if actions[authguard.StepUp] < 20 || actions[authguard.Captcha] < 5 {
				t.Errorf("reports answered %v: the sequence must exercise step_up and the CAPTCHA rules", actions)
			}
			if !slices.Equal(devicesKeys(devices[0]), devicesKeys(devices[1])) {
				t.Errorf("device tokens issued to %v on memory, %v on Redis", devicesKeys(devices[0]), devicesKeys(devices[1]))
			}
		})
	}
}
