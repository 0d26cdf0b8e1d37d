package redisstore

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/backoff"
	"github.com/tollgate-auth/tollgate/spraydetect"
)

// The op scripts' argument names, at encode's indexes: the names each
// script's body gives them on its first line.
var (
	backoffArgs = [bArgs]string{bAction: "action", bFree: "free", bBase: "base", bFactor: "factor", bMax: "maxd",
		bForget: "forget", bFingerprint: "fp", bWindow: "window", bNow: "now", bExpire: "expire", bAttempt: "attempt"}
	logArgs  = [lArgs]string{lAction: "action", lMember: "member", lBypass: "bypass", lNow: "now", lExpire: "expire"}
	rateArgs = [rArgs]string{rAlgorithm: "alg", rAction: "action", rWindow: "w", rInterval: "interval", rLimit: "limit",
		rCost: "cost", rNow: "now", rExpire: "expire", rMinPercent: "minPercent"}
)

// standaloneHeader is what an op script runs above its body when it runs on
// its own (not inside check.lua): its key and arguments as the body reads
// them, and Redis TIME in its now argument when that is "".
func standaloneHeader(now int) string {
	return fmt.Sprintf("local key, A, o, nargs = KEYS[1], ARGV, 0, #ARGV\nif A[%d] == \"\" then A[%d] = redisNow() end", now+1, now+1)
}

// Each op script names its arguments once, at the top of its body, in the
// order encode writes them; its header and check.lua find now and action
// where encode puts them. So no script holds a position of its own.
func TestScripts_ArgumentsInEncodesOrder(t *testing.T) {
	for _, sc := range []struct {
		name, lua string
		names     []string
		now       int
	}{
		{"backoff.lua", backoffLua, backoffArgs[:], bNow},
		{"log.lua", logLua, logArgs[:], lNow},
		{"rate.lua", rateLua, rateArgs[:], rNow},
	} {
		header, body, ok := strings.Cut(sc.lua, opBody)
		if !ok {
			t.Fatalf("%s has no op body marker", sc.name)
		}
		if want := standaloneHeader(sc.now); !strings.HasSuffix(header, "\n"+want) {
			t.Errorf("%s's header does not end with\n%s\ngot\n%s", sc.name, want, header)
		}
		lines := strings.SplitN(body, "\n", 3)
		want := fmt.Sprintf("local %s = unpack(A, o + 1, o + %d)", strings.Join(sc.names, ", "), len(sc.names))
		if len(lines) < 2 || lines[1] != want {
			t.Errorf("%s's body does not start with\n%s\ngot\n%q", sc.name, want, lines)
		}
		if len(lines) == 3 && strings.Contains(lines[2], "A[o +") {
			t.Errorf("%s's body reads an argument by its offset", sc.name)
		}
	}
	positions := fmt.Sprintf("local bNow, bAction, lNow, lAction, rNow, rAction = %d, %d, %d, %d, %d, %d\n",
		bNow+1, bAction+1, lNow+1, lAction+1, rNow+1, rAction+1)
	if !strings.Contains(checkLua, positions) {
		t.Errorf("check.lua does not hold the op scripts' positions as encode writes them:\n%s", positions)
	}
	if regexp.MustCompile(`(nowAt|actionAt)\s*=\s*[^,\n]*\d`).MatchString(checkLua) {
		t.Error("check.lua sets a position of its own")
	}
}

// encode writes every argument its layout names, and only those.
func TestEncode_WritesEveryArgumentOfItsLayout(t *testing.T) {
	for _, tt := range []struct {
		op   authguard.Op
		want int
	}{
		{&authguard.BackoffOp{Key: "k", Policy: backoff.Policy{Free: 1, Base: time.Second, Factor: 2, Max: time.Minute, ForgetAfter: time.Hour}}, bArgs},
		{&authguard.LogOp{Key: "k", Member: "m", Windows: spraydetect.Windows{{Length: time.Hour, Limit: 3}}}, lArgs + 2},
		{&authguard.RateOp{Key: "k", Cost: 1, Rate: authguard.RateLimit{Algorithm: authguard.TokenBucket, Interval: time.Second, Limit: 5}}, rArgs},
	} {
		c, err := encode(tt.op, "NOW", "EXP")
		if err != nil {
			t.Fatal(err)
		}
		if len(c.args) != tt.want {
			t.Errorf("%T: %d arguments, want %d", tt.op, len(c.args), tt.want)
		}
		for i, a := range c.args {
			if a == nil {
				t.Errorf("%T: argument %d not written", tt.op, i)
			}
		}
	}
}

// Redis TIME is read in one place, time.lua's redisNow, which every script
// the store loads starts with: no other script reads TIME, and each one
// that needs the time asks redisNow in one place (check.lua once a batch).
func TestScripts_ReadRedisTimeInOnePlace(t *testing.T) {
	if n := strings.Count(timeLua, "redis.call('TIME')"); n != 1 || !strings.Contains(timeLua, "\nlocal function redisNow()\n") {
		t.Errorf("time.lua reads TIME %d times, want once, in redisNow", n)
	}
	for _, sc := range []struct {
		name, lua string
		script    *redis.Script
	}{
		{"backoff.lua", backoffLua, backoffScript},
		{"log.lua", logLua, logScript},
		{"rate.lua", rateLua, rateScript},
		{"entries.lua", entriesLua, entriesScript},
		{"check.lua", checkLua, checkScript},
	} {
		if strings.Contains(sc.lua, "TIME')") {
			t.Errorf("%s reads TIME itself", sc.name)
		}
		if n := strings.Count(sc.lua, "redisNow()"); n != 1 {
			t.Errorf("%s asks redisNow in %d places, want 1", sc.name, n)
		}
		src := timeLua + sc.lua
		if sc.script == checkScript {
			src = checkSource
		}
		if sum := sha1.Sum([]byte(src)); !strings.HasPrefix(src, timeLua) || sc.script.Hash() != hex.EncodeToString(sum[:]) {
			t.Errorf("the store does not load %s with time.lua in front", sc.name)
		}
	}
	if !strings.HasPrefix(shapeSource(nil), timeLua) {
		t.Error("a shape does not start with time.lua")
	}
}
