package config

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/testkit"
)

func TestParseConfig(t *testing.T) {
	cfg, err := Parse([]byte(`# tollgate
listen: 127.0.0.1:9090
log_level: debug
timeouts:
  read_header: 2s
  shutdown: 1m
flows:
  login:
    rules:
      - name: account_backoff
        free: 3
  signup:
    template: login
    mode: shadow
`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != "127.0.0.1:9090" || cfg.LogLevel != slog.LevelDebug {
		t.Errorf("cfg = %+v", cfg)
	}
	if got, want := cfg.Timeouts, (Timeouts{ReadHeader: 2 * time.Second, Read: 10 * time.Second, Write: 10 * time.Second, Idle: 120 * time.Second, Shutdown: time.Minute}); got != want {
		t.Errorf("timeouts = %+v, want %+v", got, want)
	}
	if got := cfg.Policy.Flow("login").Rule("account_backoff").Backoff.Free; got != 3 {
		t.Errorf("login free = %d, want 3", got)
	}
	if f := cfg.Policy.Flow("signup"); f == nil || f.Mode != authguard.Shadow {
		t.Errorf("signup flow = %+v", f)
	}
	if got := strings.Join(cfg.Policy.FlowNames(), ","); got != "login,magic_link,otp_send,otp_verify,passkey,recovery_code,signup,step_up,totp" {
		t.Errorf("flows = %s", got)
	}
}

func TestParseConfig_Defaults(t *testing.T) {
	for _, data := range []string{"", "# nothing but a comment\n", "listen: 127.0.0.1:8080\n"} {
		cfg, err := Parse([]byte(data))
		if err != nil {
			t.Fatalf("%q: %v", data, err)
		}
		if cfg.Listen != "127.0.0.1:8080" || cfg.Secret != nil || cfg.Policy.Flow("login") == nil {
			t.Errorf("%q: cfg = %+v", data, cfg)
		}
	}
}

// TestParseConfig_ErrorsNameTheLine: every mistake in a file is reported
// with its line, including mistakes inside flows, which authguard reads.
func TestParseConfig_ErrorsNameTheLine(t *testing.T) {
	tests := []struct {
		name, data, want string
	}{
		{"unknown top-level key", "listen: 127.0.0.1:1\nlisten_addr: x\n", "line 2"},
		{"bad listen", "\nlisten: nowhere\n", "line 2: listen"},
		{"short secret", "secret: short\n", "line 1: secret must be at least 32 bytes"},
		{"bad log level", "log_level: loud\n", "line 1: log_level"},
		{"bad timeout", "timeouts:\n  read: soon\n", "line 2"},
		{"zero timeout", "timeouts:\n  read: 0s\n", "line 2: timeouts.read must be"},
		{"unknown timeout", "timeouts:\n  forever: 1s\n", "line 2"},
		{"unknown flow key after other keys", "listen: 127.0.0.1:1\nlog_level: info\n\nflows:\n  login:\n    fre: 3\n", "line 6"},
		{"bad flow value", "secret: " + secret32 + "\nflows:\n  login:\n    mode: sometimes\n", "line 4"},
		{"bad flow duration", "flows:\n  login:\n    attempt_ttl: 5x\n", "line 3"},
		{"flows before other keys", "flows:\n  login:\n    mode: nope\nlisten: 127.0.0.1:1\n", "line 3"},
		{"not a mapping", "- a\n- b\n", "line 1"},
		{"flow style top level", "{listen: '127.0.0.1:1', flows: {login: {mode: nope}}}", "line 1"},
		{"bad rule", "flows:\n  login:\n    rules:\n      - name: ip_rate\n        rate: 3/x\n", "line 5"},
		{"bad rule value", "flows:\n  login:\n    rules:\n      - name: ip_rate\n        limit: 0\n", "line 4: flows.login.rules[ip_rate]"},
		{"not YAML", "listen: [\n", "line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestLoadConfig_EnvironmentOverridesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tollgate.yaml")
	os.WriteFile(path, []byte("listen: 127.0.0.1:9000\nsecret: "+secret32+"\nlog_level: warn\n"), 0o600)

	cfg, err := Load(path, testkit.Env())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != "127.0.0.1:9000" || string(cfg.Secret) != secret32 || !cfg.SecretInFile || cfg.LogLevel != slog.LevelWarn {
		t.Errorf("from the file: %+v", cfg)
	}
	other := strings.Repeat("s", 40)
	cfg, err = Load(path, testkit.Env("TOLLGATE_LISTEN", "[::1]:9001", "TOLLGATE_SECRET", other, "TOLLGATE_LOG_LEVEL", "error"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != "[::1]:9001" || string(cfg.Secret) != other || cfg.SecretInFile || cfg.LogLevel != slog.LevelError {
		t.Errorf("with the environment: %+v", cfg)
	}
	for _, e := range [][]string{
		{"TOLLGATE_LISTEN", "9001"},
		{"TOLLGATE_SECRET", "short"},
		{"TOLLGATE_LOG_LEVEL", "chatty"},
	} {
		if _, err := Load(path, testkit.Env(e...)); err == nil || !strings.Contains(err.Error(), e[0]) {
			t.Errorf("%s=%s: error = %v, want one naming the variable", e[0], e[1], err)
		}
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml"), testkit.Env()); err == nil {
		t.Error("a missing file is not an error")
	}
}

// TestLoadConfig_SecretsFromFiles covers the *_FILE variables that
// systemd credentials, Compose secrets and Kubernetes Secret volumes use:
// the file's content (without its trailing newline) is the secret, both
// forms at once is an error, and no error repeats a secret.
func TestLoadConfig_SecretsFromFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	secretFile := write("secret", secret32+"\r\n")
	passFile := write("redis-password", "redis-pass-xyz\n")
	shortFile := write("short", "short-secret-value\n")

	cfg, err := Load("", testkit.Env("TOLLGATE_SECRET_FILE", secretFile,
		"TOLLGATE_REDIS_URL", "redis://127.0.0.1:6379/0", "TOLLGATE_REDIS_PASSWORD_FILE", passFile))
	if err != nil {
		t.Fatal(err)
	}
	if string(cfg.Secret) != secret32 || cfg.SecretInFile {
		t.Errorf("secret %q (in file %v), want the file's content without its line end", cfg.Secret, cfg.SecretInFile)
	}
	if cfg.Redis == nil || cfg.Redis.Password != "redis-pass-xyz" {
		t.Errorf("Redis %+v, want the password file's content", cfg.Redis)
	}

	for _, tt := range []struct {
		name string
		env  []string
		want string
	}{
		{"both secret forms", []string{"TOLLGATE_SECRET", secret32, "TOLLGATE_SECRET_FILE", secretFile}, "TOLLGATE_SECRET and TOLLGATE_SECRET_FILE are both set"},
		{"a missing secret file", []string{"TOLLGATE_SECRET_FILE", filepath.Join(dir, "none")}, "TOLLGATE_SECRET_FILE: "},
		{"a short secret file", []string{"TOLLGATE_SECRET_FILE", shortFile}, "TOLLGATE_SECRET_FILE: must be at least"},
		{"both password forms", []string{"TOLLGATE_REDIS_URL", "redis://127.0.0.1:6379/0", "TOLLGATE_REDIS_PASSWORD", "p", "TOLLGATE_REDIS_PASSWORD_FILE", passFile}, "TOLLGATE_REDIS_PASSWORD and TOLLGATE_REDIS_PASSWORD_FILE are both set"},
	} {
		_, err := Load("", testkit.Env(tt.env...))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.want)
			continue
		}
		for _, secret := range []string{secret32, "short-secret-value", "redis-pass-xyz"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%s: the error %q holds a secret", tt.name, err)
			}
		}
	}
}

func TestCheckLoopback(t *testing.T) {
	tests := []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:8080", true},
		{"127.0.0.2:8080", true},
		{"[::1]:8080", true},
		{"localhost:8080", true},
		{"0.0.0.0:8080", false},
		{":8080", false},
		{"[::]:8080", false},
		{"192.0.2.1:8080", false},
		{"example.com:8080", false},
	}
	for _, tt := range tests {
		err := CheckLoopback(tt.addr)
		if (err == nil) != tt.ok {
			t.Errorf("CheckLoopback(%q) = %v, want ok=%v", tt.addr, err, tt.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "caller authentication") {
			t.Errorf("CheckLoopback(%q) = %v, want it to say why", tt.addr, err)
		}
	}
}

// Shared round trips are on unless the file turns them off, and the
// environment's Redis address keeps what the file said of them.
func TestConfig_SharedRoundTripsOnUnlessTurnedOff(t *testing.T) {
	for _, tt := range []struct {
		file string
		off  bool
	}{
		{"store:\n  redis:\n    url: redis://a:1\n", false},
		{"store:\n  redis:\n    url: redis://a:1\n    shared_round_trips: true\n", false},
		{"store:\n  redis:\n    url: redis://a:1\n    shared_round_trips: false\n", true},
	} {
		cfg, err := Parse([]byte(tt.file))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Redis.DisableSharedRoundTrips != tt.off {
			t.Errorf("%q: DisableSharedRoundTrips %v, want %v", tt.file, cfg.Redis.DisableSharedRoundTrips, tt.off)
		}
		if err := ApplyEnv(cfg, testkit.Env("TOLLGATE_REDIS_URL", "redis://b:2")); err != nil || cfg.Redis.DisableSharedRoundTrips != tt.off {
			t.Errorf("%q with TOLLGATE_REDIS_URL: DisableSharedRoundTrips %v (%v), want %v", tt.file, cfg.Redis.DisableSharedRoundTrips, err, tt.off)
		}
	}
	env := Default()
	if err := ApplyEnv(env, testkit.Env("TOLLGATE_REDIS_URL", "redis://b:2")); err != nil || env.Redis.DisableSharedRoundTrips {
		t.Errorf("no file: DisableSharedRoundTrips %v (%v), want false", env.Redis.DisableSharedRoundTrips, err)
	}
	if _, err := Parse([]byte("store:\n  redis:\n    url: redis://a:1\n    shared_round_trips: maybe\n")); err == nil || !strings.Contains(err.Error(), "store.redis.shared_round_trips") {
		t.Errorf("shared_round_trips: maybe: %v, want an error naming it", err)
	}
}

func TestConfig_RedisFromFileAndEnvironment(t *testing.T) {
	cfg, err := Parse([]byte("store:\n  redis:\n    url: redis://127.0.0.1:6379/0\n    password: from-file\n    timeout: 80ms\nkey_prefix: tollgate-prod\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r := cfg.Redis; r == nil || r.URL != "redis://127.0.0.1:6379/0" || r.Password != "from-file" || r.Timeout != 80*time.Millisecond || cfg.KeyPrefix != "tollgate-prod" {
		t.Fatalf("parsed %+v %+v", cfg.Redis, cfg)
	}
	env := map[string]string{"TOLLGATE_REDIS_CLUSTER_ADDRS": "10.0.0.1:7000,10.0.0.2:7000", "TOLLGATE_REDIS_PASSWORD": "from-env"}
	if err := ApplyEnv(cfg, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if r := cfg.Redis; r.URL != "" || len(r.ClusterAddrs) != 2 || r.Password != "from-env" || r.Timeout != 80*time.Millisecond {
		t.Errorf("after the environment: %+v", r)
	}

	sentinel := Default()
	if err := ApplyEnv(sentinel, testkit.Env("TOLLGATE_REDIS_SENTINEL_ADDRS", "127.0.0.1:26379,127.0.0.1:26380", "TOLLGATE_REDIS_SENTINEL_MASTER", "tollgate")); err != nil ||
		sentinel.Redis == nil || len(sentinel.Redis.SentinelAddrs) != 2 || sentinel.Redis.SentinelMaster != "tollgate" {
		t.Errorf("sentinel from the environment: %+v, %v", sentinel.Redis, err)
	}
	if err := ApplyEnv(Default(), testkit.Env("TOLLGATE_REDIS_SENTINEL_ADDRS", "127.0.0.1:26379")); err == nil {
		t.Error("sentinel addresses without a master name were accepted")
	}

	none := Default()
	if err := ApplyEnv(none, func(k string) string { return map[string]string{"TOLLGATE_REDIS_URL": "redis://h:1"}[k] }); err != nil || none.Redis == nil || none.Redis.URL != "redis://h:1" {
		t.Errorf("TOLLGATE_REDIS_URL alone: %+v, %v", none.Redis, err)
	}

	for _, bad := range []string{
		"store:\n  redis:\n    url: redis://a:1\n    cluster_addrs: [b:2]\n",
		"store:\n  redis: {}\n",
		"store:\n  redis:\n    url: redis://a:1\n    timeout: 1m\n",
		"key_prefix: \"a:b\"\n",
		"store:\n  redis:\n    urll: redis://a:1\n",
	} {
		if _, err := Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), "line") {
			t.Errorf("Parse(%q) = %v, want an error naming the line", bad, err)
		}
	}
}

const secret32 = "0123456789abcdef0123456789abcdef"

// TestParse_Auth: an auth section reads its key files and is checked as
// auth.New checks it, each error with its line; it lets the server listen
// beyond loopback.
func TestParse_Auth(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "hs.key")
	if err := os.WriteFile(secret, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := fmt.Sprintf("listen: 0.0.0.0:8080\nauth:\n  audience: tollgate\n  keys: [{id: k, alg: HS256, secret_file: %q}]\n  tenants: [{name: shop, issuer: \"https://auth.shop.example\"}]\n", secret)
	cfg, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Auth == nil || len(cfg.Auth.Keys) != 1 || string(cfg.Auth.Keys[0].Secret) != "0123456789abcdef0123456789abcdef" || cfg.CheckListen() != nil {
		t.Errorf("auth %+v, listen check %v", cfg.Auth, cfg.CheckListen())
	}
	withSecret := strings.Replace(good, `issuer: "https://auth.shop.example"}`, fmt.Sprintf(`issuer: "https://auth.shop.example", secret_file: %q}`, secret), 1)
	if cfg, err := Parse([]byte(withSecret)); err != nil || string(cfg.TenantSecrets["shop"]) != "0123456789abcdef0123456789abcdef" {
		t.Errorf("a tenant's secret_file: %v, %q", err, cfg.TenantSecrets["shop"])
	}
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("short"), 0o600)
	at := strings.LastIndex(withSecret, secret) // the tenant's, not the key's
	shortTenant := withSecret[:at] + short + withSecret[at+len(secret):]
	for _, c := range []struct{ name, yaml, want string }{
		{"a short tenant secret", shortTenant, "auth.tenants[shop].secret_file must be at least 32 bytes"},
		{"no audience", strings.Replace(good, "audience: tollgate", "audience: \"\"", 1), "line 2: auth:"},
		{"a key without a file", "auth:\n  audience: a\n  keys: [{id: k, alg: HS256}]\n  tenants: [{name: shop, issuer: i}]\n", "line 1: auth: keys[0]: give public_key_file"},
		{"a missing file", strings.Replace(good, secret, filepath.Join(dir, "nope"), 1), "no such file"},
		{"an unknown key", strings.Replace(good, "audience:", "audiense:", 1), "audiense"},
		{"RS256 with a secret", strings.Replace(good, "alg: HS256", "alg: RS256", 1), "line 2: auth:"},
	} {
		if _, err := Parse([]byte(c.yaml)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}

// TestParse_AuthKeyTenants: with several tenants each key, and a JWK Set's
// keys, name the tenants they verify tokens for (a key shared on purpose
// names each); a key that names none is refused, not shared.
func TestParse_AuthKeyTenants(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "hs.key")
	jwks := filepath.Join(dir, "jwks.json")
	os.WriteFile(secret, []byte("0123456789abcdef0123456789abcdef"), 0o600)
	os.WriteFile(jwks, []byte(`{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"idp","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}`), 0o600)
	yaml := func(keyTenants, jwksTenants string) string {
		return fmt.Sprintf("auth:\n  audience: tollgate\n  keys: [{id: k, alg: HS256, secret_file: %q%s}]\n  jwks_file: %q\n%s  tenants: [{name: shop, issuer: a}, {name: bank, issuer: b}]\n",
			secret, keyTenants, jwks, jwksTenants)
	}
	cfg, err := Parse([]byte(yaml(", tenants: [bank, shop]", "  jwks_tenants: [shop]\n")))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Auth.Keys; len(got) != 2 || !slices.Equal(got[0].Tenants, []string{"bank", "shop"}) || !slices.Equal(got[1].Tenants, []string{"shop"}) {
		t.Errorf("keys %+v, want k for bank and shop, idp for shop", got)
	}
	for _, c := range []struct{ name, yaml, want string }{
		{"a key of no tenant", yaml("", "  jwks_tenants: [shop]\n"), `line 1: auth: keys[0] (kid "k"): name the tenants`},
		{"a key of an unknown tenant", yaml(", tenants: [shop, initech]", "  jwks_tenants: [shop]\n"), `tenant "initech" is not configured`},
		{"a JWK Set of no tenant", yaml(", tenants: [shop]", ""), "line 1: auth: jwks_tenants: name the tenants"},
	} {
		if _, err := Parse([]byte(c.yaml)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}

// TestParse_TLS: tls needs both files, and a pair that loads.
func TestParse_TLS(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"tls: {cert_file: a.pem}\n", "line 1: tls: give cert_file and key_file"},
		{"tls: {cert_file: /nonexistent/a.pem, key_file: /nonexistent/b.pem}\n", "line 1: tls: open /nonexistent/a.pem"},
	} {
		if _, err := Parse([]byte(c.yaml)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.yaml, err, c.want)
		}
	}
}

// TestParse_TenantPolicy: a tenant's flows are laid over the file's policy
// for that tenant only, and their errors name the tenant.
func TestParse_TenantPolicy(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "hs.key")
	os.WriteFile(secret, []byte("0123456789abcdef0123456789abcdef"), 0o600)
	yaml := fmt.Sprintf(`auth:
  audience: tollgate
  keys: [{id: k, alg: HS256, secret_file: %q, tenants: [shop, bank]}]
  tenants:
    - {name: shop, issuer: a}
    - name: bank
      issuer: b
      flows:
        login:
          rules: [{name: account_backoff, free: 2}]
flows:
  login:
    rules: [{name: account_backoff, max: 1h}]
`, secret)
	cfg, err := Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	bank := cfg.TenantPolicies["bank"].Flow("login").Rule("account_backoff").Backoff
	main := cfg.Policy.Flow("login").Rule("account_backoff").Backoff
	if bank.Free != 2 || bank.Max != time.Hour || main.Free != 5 || main.Max != time.Hour || cfg.TenantPolicies["shop"] != nil {
		t.Errorf("bank %+v, file %+v, shop %v", bank, main, cfg.TenantPolicies["shop"])
	}
	if _, err := Parse([]byte(strings.Replace(yaml, "free: 2", "fre: 2", 1))); err == nil || !strings.Contains(err.Error(), "tenant bank") {
		t.Errorf("a tenant's bad flow: %v", err)
	}
}

func TestParse_MemoryLimit(t *testing.T) {
	tests := []struct {
		in   string
		want int64 // 0: refused
	}{
		{"320MiB", 320 << 20},
		{"1 GiB", 1 << 30},
		{"512000000", 512_000_000},
		{"16MiB", MinMemoryLimit},
		{"1TiB", MaxMemoryLimit},
		{"15MiB", 0},
		{"2TiB", 0},
		{"-5MiB", 0},
		{"lots", 0},
		{"", 0},
	}
	for _, tt := range tests {
		cfg, err := Parse([]byte(fmt.Sprintf("store:\n  memory_limit: %q\n", tt.in)))
		switch {
		case tt.want == 0 && err == nil:
			t.Errorf("memory_limit %q: accepted as %d, want an error", tt.in, cfg.MemoryLimit)
		case tt.want == 0 && !strings.Contains(err.Error(), "line 2: store.memory_limit must be a size between 16MiB and 1TiB"):
			t.Errorf("memory_limit %q: error %q does not say what is valid", tt.in, err)
		case tt.want != 0 && (err != nil || cfg.MemoryLimit != tt.want):
			t.Errorf("memory_limit %q: %d %v, want %d", tt.in, cfg.MemoryLimit, err, tt.want)
		}
	}
	if cfg, _ := Parse(nil); cfg.MemoryLimit != 0 {
		t.Errorf("default memory_limit %d, want 0 (the memory store's own)", cfg.MemoryLimit)
	}
}

// FuzzParseBytes: any text is a size within the bounds or an error, never
// a panic.
func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"320MiB", "1 GiB", "512000000", "1e3 kB", "-1", "9999999999999999999999 EiB", "NaN"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseBytes(s)
		if err == nil && (n < MinMemoryLimit || n > MaxMemoryLimit) {
			t.Errorf("ParseBytes(%q) = %d, outside the bounds", s, n)
		}
	})
}

// The subject key layout is a Cluster's, opt-in, and a word the file spells.
func TestConfig_ClusterKeyLayoutIsOptInAndACluster(t *testing.T) {
	for _, tt := range []struct {
		file string
		tags bool
		err  string
	}{
		{"store:\n  redis:\n    cluster_addrs: [a:1]\n", false, ""},
		{"store:\n  redis:\n    cluster_addrs: [a:1]\n    cluster_key_layout: subject\n", true, ""},
		{"store:\n  redis:\n    cluster_addrs: [a:1]\n    cluster_key_layout: tags\n", false, "cluster_key_layout must be"},
		{"store:\n  redis:\n    url: redis://a:1\n    cluster_key_layout: subject\n", false, "is for a Redis Cluster"},
	} {
		cfg, err := Parse([]byte(tt.file))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "store.redis") {
				t.Errorf("%q: %v, want an error at store.redis saying %q", tt.file, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tt.file, err)
		}
		if got := cfg.Redis.SubjectTags(); got != tt.tags {
			t.Errorf("%q: SubjectTags %v, want %v", tt.file, got, tt.tags)
		}
	}
}
