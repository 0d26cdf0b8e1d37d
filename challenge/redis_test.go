package challenge_test

import (
	"bytes"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/challenge"
	"github.com/tollgate-auth/tollgate/internal/testkit/redistest"
)

// onRedis starts a real redis-server (RDB compression off, so that a
// string stored in clear shows in the dump file as it is) and returns a
// client on it.
func onRedis(t *testing.T) *redis.Client {
	srv := redistest.Server(t, "--rdbcompression", "no")
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { c.Close() })
	return c
}

// redisChallenger is a Challenger on c, as one instance of several.
func redisChallenger(t *testing.T, c redis.UniversalClient) *challenge.Challenger {
	ch, _ := newChallenger(t, challenge.Config{Store: challenge.NewRedisStore(c, "")})
	return ch
}

// rdbDump has Redis write its RDB file and returns it, with every key and
// value read over the wire besides.
func rdbDump(t *testing.T, c *redis.Client) []byte {
	t.Helper()
	if err := c.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	dir, err := c.ConfigGet(ctx, "dir").Result()
	if err != nil {
		t.Fatal(err)
	}
	file, err := c.ConfigGet(ctx, "dbfilename").Result()
	if err != nil {
		t.Fatal(err)
	}
	dump, err := os.ReadFile(filepath.Join(dir["dir"], file["dbfilename"]))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := c.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		v, err := c.Get(ctx, k).Bytes()
		if err != nil {
			t.Fatal(err)
		}
		dump = append(append(append(dump, k...), '\n'), v...)
	}
	return dump
}

func TestRedis_TheStoredBlobHoldsNoPlaintextOfTheBody(t *testing.T) {
	c := onRedis(t)
	ch := redisChallenger(t, c)
	body, handle, _ := page(t, ch, "", loginSubmission(), 0)
	// A key written in clear shows in the dump: the grep below can see.
	if err := c.Set(ctx, "control", "plain-control-marker", 0).Err(); err != nil {
		t.Fatal(err)
	}
	dump := rdbDump(t, c)
	if !bytes.Contains(dump, []byte("plain-control-marker")) {
		t.Fatal("the dump does not show a plaintext value; the test cannot see one")
	}
	for _, never := range []string{"correct-horse", "alice", "password", "username", "/login", "next=", handle} {
		if bytes.Contains(dump, []byte(never)) {
			t.Errorf("the Redis dump holds %q", never)
		}
	}
	if strings.Contains(body, "correct-horse") {
		t.Error("the page holds the password")
	}
}

func TestRedis_TwoInstancesOnOneRedisShareSingleUse(t *testing.T) {
	c := onRedis(t)
	a, b := redisChallenger(t, c), redisChallenger(t, redis.NewClient(&redis.Options{Addr: c.Options().Addr}))
	// Held and issued by a; its post goes to a and b at once, many times.
	_, handle, chal := page(t, a, "", loginSubmission(), 0)
	form := url.Values{"tollgate_handle": {handle}, "tollgate_token": {chal.Token}, "tollgate_nonce": {solve(t, chal)}}
	var (
		mu     sync.Mutex
		solved int
		bodies [][]byte
		wg     sync.WaitGroup
	)
	for i := range 16 {
		inst := []*challenge.Challenger{a, b}[i%2]
		wg.Go(func() {
			red, err := inst.Redeem(ctx, "", solutionPost(form), netip.Addr{})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if red.Solved {
				solved++
				bodies = append(bodies, red.Submission.Body)
			} else if red.Reason != challenge.ReasonReplayed {
				t.Errorf("Reason = %q, want replayed", red.Reason)
			}
		})
	}
	wg.Wait()
	if solved != 1 || !bytes.Equal(bodies[0], secretBody) {
		t.Fatalf("%d of 16 posts over two instances solved, want exactly 1 with the body", solved)
	}
	// A plug-in's challenge, issued by b, verified on a then on b.
	pc := issue(t, b, challenge.IssueOptions{})
	s := challenge.Solution{Token: pc.Token, Nonce: solve(t, pc)}
	if got := verify(t, a, "", "", s); !got.Solved {
		t.Fatalf("on a: %+v", got)
	}
	if got, want := verify(t, b, "", "", s).Reason, challenge.ReasonReplayed; got != want {
		t.Fatalf("then on b: Reason = %q, want %q", got, want)
	}
}

func TestRedis_AHeldSubmissionIsTakenOnceAcrossInstances(t *testing.T) {
	c := onRedis(t)
	a, b := redisChallenger(t, c), redisChallenger(t, c)
	handle, err := a.Hold(ctx, "", loginSubmission())
	if err != nil {
		t.Fatal(err)
	}
	// Two challenges for one handle, solved on two instances: the body
	// comes out once.
	c1, c2 := issue(t, a, challenge.IssueOptions{Handle: handle}), issue(t, b, challenge.IssueOptions{Handle: handle})
	r1 := redeem(t, b, "", url.Values{"tollgate_handle": {handle}, "tollgate_token": {c1.Token}, "tollgate_nonce": {solve(t, c1)}})
	r2 := redeem(t, a, "", url.Values{"tollgate_handle": {handle}, "tollgate_token": {c2.Token}, "tollgate_nonce": {solve(t, c2)}})
	if !r1.Solved || !bytes.Equal(r1.Submission.Body, secretBody) {
		t.Fatalf("first: %+v", r1.Result)
	}
	if r2.Solved || r2.Reason != challenge.ReasonNoSubmission {
		t.Fatalf("second: %+v, want no_submission", r2.Result)
	}
}
