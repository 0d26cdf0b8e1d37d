package redisstore_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
	"github.com/tollgate-auth/tollgate/internal/config"
)

// TestCaptureFreshCheckCalls writes the script calls of one fresh login
// check (account, address, password fingerprint; it proceeds) on one node
// and on a Cluster with subject hash tags, for scripts/bench-cluster-floor.sh
// to replay with redis-benchmark. A tool, not a test: it runs only when
// TOLLGATE_FLOOR_CAPTURE names the directory to write, with
// TOLLGATE_FLOOR_REDIS the address of a redis-server and
// TOLLGATE_FLOOR_CLUSTER that of a cluster-enabled one (it may own every
// slot alone):
//
//	TOLLGATE_FLOOR_CAPTURE=DIR TOLLGATE_FLOOR_REDIS=127.0.0.1:P1 TOLLGATE_FLOOR_CLUSTER=127.0.0.1:P2 \
//	  go test -short -count=1 -run '^TestCaptureFreshCheckCalls$' ./authguard/redisstore/
//
// Each call is DIR/LAYOUT-N.lua, the script, and DIR/LAYOUT-N.args, one
// line each: the number of keys, the keys, the arguments. LAYOUT is
// one-node or cluster. The calls are those of the second fresh check, so
// that each is an EVALSHA as in a server that has been up a while (the
// first sends each new shape by EVAL).
func TestCaptureFreshCheckCalls(t *testing.T) {
	dir := os.Getenv("TOLLGATE_FLOOR_CAPTURE")
	if dir == "" {
		t.Skip("a capture for scripts/bench-cluster-floor.sh, not a test: set TOLLGATE_FLOOR_CAPTURE, TOLLGATE_FLOOR_REDIS and TOLLGATE_FLOOR_CLUSTER")
	}
	one := redis.NewClient(&redis.Options{Addr: os.Getenv("TOLLGATE_FLOOR_REDIS"), ContextTimeoutEnabled: true})
	defer one.Close()
	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{os.Getenv("TOLLGATE_FLOOR_CLUSTER")}, ContextTimeoutEnabled: true})
	defer cl.Close()
	captureCheck(t, dir, "one-node", one)
	captureCheck(t, dir, "cluster", cl)
}

// captureCheck runs two fresh checks on a store on c and writes the
// EVALSHAs of the second, each with the script its hash names.
func captureCheck(t *testing.T, dir, layout string, c redis.UniversalClient) {
	t.Helper()
	rec := &callRecorder{sources: map[string]string{}}
	c.AddHook(seeCmds(rec.see))
	cc, cluster := c.(*redis.ClusterClient)
	if cluster {
		// Preload loads the scripts through each master's own client,
		// which the Cluster's hooks do not see: there only the scripts
		// are kept, the Cluster's hook seeing the calls.
		cc.OnNewNode(func(n *redis.Client) { n.AddHook(seeCmds(func(cmd redis.Cmder) { rec.keep(cmd, false) })) })
	}
	st, err := redisstore.New(redisstore.Config{Client: c, Timeout: 5 * time.Second, SubjectTags: cluster})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	if err := st.Preload(ctx); err != nil {
		t.Fatal(err)
	}
	e, err := authguard.New(authguard.Config{Policy: config.DefaultPolicy(), Store: st, Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	// Subjects this run makes up, so that a second capture on the same
	// servers still finds them fresh.
	run := time.Now().UnixNano()
	check := func(i int) {
		v, err := e.Check(ctx, authguard.CheckRequest{Flow: "login", Account: fmt.Sprintf("floor%d-%d@example.com", run, i),
			IP: fmt.Sprintf("10.%d.%d.%d", run>>16&255, run>>8&255, i), PasswordFingerprint: fmt.Sprint("fp", run, i)})
		if err != nil {
			t.Fatal(err)
		}
		if v.Action != authguard.Proceed {
			t.Fatalf("%s: fresh check %d: %v, want proceed", layout, i, v.Action)
		}
	}
	check(1)
	rec.start()
	check(2)
	calls := rec.stop()
	if len(calls) == 0 {
		t.Fatalf("%s: no EVALSHA seen in a fresh check", layout)
	}
	for n, args := range calls {
		src, ok := rec.source(args[1])
		if !ok {
			t.Fatalf("%s: EVALSHA %s of a script neither loaded nor sent by EVAL", layout, args[1])
		}
		lines := args[2:] // the number of keys, the keys, the arguments
		for _, a := range lines {
			if strings.ContainsAny(a, "\r\n") {
				t.Fatalf("%s: an argument of call %d holds a line break: not writable one a line", layout, n+1)
			}
		}
		base := filepath.Join(dir, fmt.Sprintf("%s-%d", layout, n+1))
		if err := os.WriteFile(base+".lua", []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(base+".args", []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		nkeys, _ := strconv.Atoi(args[2])
		t.Logf("%s call %d: EVALSHA %s, %d keys, %d arguments", layout, n+1, args[1], nkeys, len(args)-3-nkeys)
	}
}

// callRecorder keeps every script a client sends (SCRIPT LOAD, EVAL) by
// its hash, and, between start and stop, every EVALSHA's arguments.
type callRecorder struct {
	mu        sync.Mutex
	sources   map[string]string
	recording bool
	calls     [][]string
}

func (r *callRecorder) start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recording, r.calls = true, nil
}

func (r *callRecorder) stop() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recording = false
	return r.calls
}

func (r *callRecorder) source(sha string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	src, ok := r.sources[strings.ToLower(sha)]
	return src, ok
}

func (r *callRecorder) see(cmd redis.Cmder) { r.keep(cmd, true) }

// keep records cmd's script, if it sends one, and its arguments if it is
// an EVALSHA, calls is set and r is recording.
func (r *callRecorder) keep(cmd redis.Cmder, calls bool) {
	args := make([]string, len(cmd.Args()))
	for i, a := range cmd.Args() {
		switch v := a.(type) {
		case string:
			args[i] = v
		case []byte:
			args[i] = string(v)
		default:
			args[i] = fmt.Sprint(v)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	source := func(src string) {
		sum := sha1.Sum([]byte(src))
		r.sources[hex.EncodeToString(sum[:])] = src
	}
	switch name := strings.ToLower(args[0]); {
	case name == "eval" && len(args) > 1:
		source(args[1])
	case name == "script" && len(args) > 2 && strings.EqualFold(args[1], "load"):
		source(args[2])
	case name == "evalsha" && len(args) > 2 && calls && r.recording:
		r.calls = append(r.calls, args)
	}
}
