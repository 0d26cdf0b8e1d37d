package redisstore

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// infoPersistence is an INFO persistence answer of Redis 7 with the fields
// persistenceFromInfo reads.
func infoPersistence(aof, bgsave string, changes, lastSave int64) string {
	return fmt.Sprintf("# Persistence\r\nloading:0\r\nrdb_changes_since_last_save:%d\r\nrdb_bgsave_in_progress:%s\r\n"+
		"rdb_last_save_time:%d\r\nrdb_last_bgsave_status:ok\r\naof_enabled:%s\r\naof_rewrite_in_progress:0\r\n",
		changes, bgsave, lastSave, aof)
}

// TestPersistenceFromInfo: INFO, read when Redis refuses CONFIG, says
// "none" only when changes have waited unsaved past unsavedFor with
// neither an append-only file nor a snapshot being written; what it cannot
// tell is unknown.
func TestPersistenceFromInfo(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	ago := func(d time.Duration) int64 { return now.Add(-d).Unix() }
	tests := []struct {
		name string
		info string
		now  time.Time
		want string
	}{
		{"an append-only file", infoPersistence("1", "0", 5, ago(3*time.Hour)), now, "aof"},
		{"an append-only file and a snapshot being written", infoPersistence("1", "1", 5, ago(time.Minute)), now, "aof+rdb"},
		{"a snapshot being written", infoPersistence("0", "1", 5, ago(3*time.Hour)), now, "rdb"},
		{"changes unsaved for 2 hours", infoPersistence("0", "0", 1, ago(2*time.Hour)), now, "none"},
		{"changes unsaved for an hour exactly: a schedule's last save point", infoPersistence("0", "0", 1, ago(time.Hour)), now, "unknown"},
		{"changes unsaved for 10 minutes: a schedule may not be due", infoPersistence("0", "0", 100, ago(10*time.Minute)), now, "unknown"},
		{"nothing to save", infoPersistence("0", "0", 0, ago(5*time.Hour)), now, "unknown"},
		{"no server time", infoPersistence("0", "0", 1, ago(2*time.Hour)), time.Time{}, "unknown"},
		{"no aof_enabled field (a proxy)", "# Persistence\r\nrdb_changes_since_last_save:1\r\nrdb_bgsave_in_progress:0\r\nrdb_last_save_time:1\r\n", now, "unknown"},
		{"a field that is no number", strings.Replace(infoPersistence("0", "0", 1, ago(2*time.Hour)), "rdb_last_save_time:", "rdb_last_save_time:x", 1), now, "unknown"},
		{"empty", "", now, "unknown"},
	}
	for _, tt := range tests {
		if got := persistenceFromInfo(tt.info, tt.now); got.String() != tt.want {
			t.Errorf("%s: persistenceFromInfo = %s, want %s", tt.name, got, tt.want)
		}
	}
}

// FuzzPersistenceFromInfo: any answer reads as a mode without a panic, and
// "none" only with aof_enabled:0 and rdb_bgsave_in_progress:0 in it.
func FuzzPersistenceFromInfo(f *testing.F) {
	f.Add(infoPersistence("0", "0", 1, 1), int64(1_800_000_000))
	f.Add(infoPersistence("1", "0", 0, 0), int64(0))
	f.Add("aof_enabled:0\nrdb_bgsave_in_progress:0\nrdb_changes_since_last_save:9223372036854775807\nrdb_last_save_time:-9223372036854775808", int64(1))
	f.Add("::::\r\n\r\n:", int64(-1))
	f.Fuzz(func(t *testing.T, info string, now int64) {
		at := time.Unix(now, 0)
		if now == 0 {
			at = time.Time{}
		}
		p := persistenceFromInfo(info, at)
		if p.Addr != "" || (p.Source != "" && p.Source != "info") {
			t.Fatalf("persistenceFromInfo = %+v", p)
		}
		if p.Forgets() && (!strings.Contains(info, "aof_enabled:0") || !strings.Contains(info, "rdb_bgsave_in_progress:0")) {
			t.Fatalf("none from %q", info)
		}
	})
}

// TestLoopback: only this host's addresses count, and names other than
// localhost are not looked up.
func TestLoopback(t *testing.T) {
	tests := []struct {
		network, addr string
		want          bool
	}{
		{"tcp", "127.0.0.1:6379", true},
		{"tcp", "127.8.9.10:6379", true},
		{"tcp", "[::1]:6379", true},
		{"tcp", "[::ffff:127.0.0.1]:6379", true},
		{"tcp", "localhost:6379", true},
		{"tcp", "LocalHost:6379", true},
		{"tcp", "redis.localhost:6379", true},
		{"unix", "/run/redis.sock", true},
		{"", "/run/redis.sock", true},
		{"tcp", "10.0.0.1:6379", false},
		{"tcp", "[2001:db8::1]:6379", false},
		{"tcp", "0.0.0.0:6379", false},
		{"tcp", "redis:6379", false},
		{"tcp", "localhost.example.com:6379", false},
		{"tcp", "FailoverClient", false},
		{"tcp", "127.0.0.1", false}, // no port: not an address go-redis dials
	}
	for _, tt := range tests {
		if got := loopback(tt.network, tt.addr); got != tt.want {
			t.Errorf("loopback(%q, %q) = %v, want %v", tt.network, tt.addr, got, tt.want)
		}
	}
}
