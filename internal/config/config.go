// Package config reads tollgate's configuration: a YAML file laid over the
// defaults, then the TOLLGATE_* environment variables laid over the file. The
// server and the simulator read the same files through it.
package config

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"go.yaml.in/yaml/v3"

	"github.com/tollgate-auth/tollgate/auth"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/redisstore"
)

// Config is the server's configuration: a YAML file laid over the defaults,
// then the TOLLGATE_* environment variables laid over the file.
type Config struct {
	// Listen is the host:port to serve on. The default is 127.0.0.1:8080.
	Listen string
	// Secret keys identifier hashes and signs attempt and device tokens; at
	// least 32 bytes, the same on every instance. The default is empty: a
	// random secret per process.
	Secret []byte
	// SecretInFile is true when the secret came from the file.
	SecretInFile bool
	// LogLevel is the least level logged. The default is info.
	LogLevel slog.Level
	// Timeouts bound each phase of a connection and the shutdown.
	Timeouts Timeouts
	// Policy is the set of flows. The default is DefaultPolicy().
	Policy *authguard.Policy
	// Redis, when set, keeps the state in Redis or a Redis Cluster shared by
	// every instance. The default is nil: the embedded memory store.
	Redis *RedisConfig
	// KeyPrefix starts every store key. The default is "tg".
	KeyPrefix string
	// MemoryLimit bounds the bytes the embedded memory store's keys hold
	// (memstore.Config.MemoryLimit), when there is no Redis. The default is
	// 0: the memory store's own, 320 MiB.
	MemoryLimit int64
	// HeldIndexBytes, above zero, turns on the held-subjects index
	// (authguard.Config.HeldBytes: GET /v1/admin/held) and bounds each
	// tenant's. The default is 0: off.
	HeldIndexBytes int64
	// EntriesRefresh is how often an instance reads the administrators'
	// allow and deny entries from the store, so that one added on another
	// instance applies here. The default is 5s.
	EntriesRefresh time.Duration
	// DecisionLog, when set, is where one JSON line per check, report and
	// send goes (package decisionlog): a file path (appended to) or
	// "stdout". The default is empty: no decision log.
	DecisionLog string
	// Auth, when set, requires a bearer token on every /v1 call and lets
	// the server listen on any address. The default is nil: no
	// authentication, loopback only.
	Auth *auth.Config
	// TLS, when set, serves HTTPS with this certificate and key (PEM files,
	// reloaded when they change or on SIGHUP). The default is nil: HTTP.
	TLS *TLSConfig
	// TenantSecrets are the secrets of the tenants that have their own
	// (auth.tenants[].secret_file): they key those tenants' subject hashes.
	TenantSecrets map[string][]byte
	// TenantPolicies are the policies of the tenants whose auth entry has
	// flows: those flows laid over the file's policy.
	TenantPolicies map[string]*authguard.Policy
	// Webhooks, when set, delivers the engine's notices to HTTP endpoints
	// (package webhook). The default is nil: no events are sent.
	Webhooks *Webhooks
	// Challenge configures the challenge a captcha verdict is answered with
	// (challenge.go). The default is the built-in proof of work with the
	// challenge package's defaults.
	Challenge Challenge
	// Proxy, when set, serves the reverse proxy (proxy.go) on a listener of
	// its own. The default is nil: no proxy.
	Proxy *Proxy
	// Breached, when set, serves GET /v1/breached/{prefix} (breached.go).
	// The default is nil: the route answers 404 breached-off.
	Breached *Breached
	// StrictStore, set by `tollgate serve -strict-store` (never by the
	// file), refuses to start on a Redis whose maxmemory-policy may evict
	// keys, that keeps no persistence (neither an append-only file nor
	// snapshots) or that answers without a password on an address that is
	// not loopback, and fails /readyz while it does. The default is false:
	// a warning, a metric and a /readyz warning.
	StrictStore bool
}

// Webhooks configures event delivery: where each tenant's events go and
// how long a delivery is retried.
type Webhooks struct {
	Endpoints []WebhookEndpoint
	// MaxAge is how long an event is retried before it is dead-lettered.
	// The default is 24h.
	MaxAge time.Duration
	// Timeout bounds one delivery. The default is 10s.
	Timeout time.Duration
}

// WebhookEndpoint is one receiver of events.
type WebhookEndpoint struct {
	// Name names the endpoint in metrics, logs and dead letters.
	Name string
	// Tenant is the tenant whose events go here. The default is the
	// default tenant.
	Tenant string
	// URL is where events are POSTed: https, or http to a loopback address.
	URL string
	// Secret signs the deliveries (Standard Webhooks, "whsec_" and base64),
	// read from secret_file.
	Secret string
	// Types are the event types sent here; empty: every type.
	Types []string
	// RatePerSecond and Burst limit the deliveries to this endpoint; zero:
	// the delivery package's defaults.
	RatePerSecond float64
	Burst         int
}

// TLSConfig names the server's certificate and key files.
type TLSConfig struct {
	CertFile, KeyFile string
}

// RedisConfig says how to reach Redis: the Redis store's own client settings.
type RedisConfig = redisstore.ClientConfig

// Timeouts are the server's time limits.
type Timeouts struct {
	// ReadHeader bounds reading a request's headers. The default is 5s.
	ReadHeader time.Duration
	// Read bounds reading a whole request, body included. The default is 10s.
	Read time.Duration
	// Write bounds the time from the end of the request headers to the end
	// of the response. The default is 10s.
	Write time.Duration
	// Idle bounds how long a keep-alive connection waits for its next
	// request. The default is 120s.
	Idle time.Duration
	// Shutdown bounds how long a SIGTERM waits for in-flight requests. The
	// default is 20s.
	Shutdown time.Duration
}

// Default is the configuration without a file or environment.
func Default() *Config {
	return &Config{
		Listen:         "127.0.0.1:8080",
		LogLevel:       slog.LevelInfo,
		EntriesRefresh: 5 * time.Second,
		Timeouts: Timeouts{
			ReadHeader: 5 * time.Second,
			Read:       10 * time.Second,
			Write:      10 * time.Second,
			Idle:       120 * time.Second,
			Shutdown:   20 * time.Second,
		},
	}
}

// configKeys are the top-level keys of a config file.
var configKeys = yamlKeys(fileConfig{})

// checkFileKeys checks the keys of mapping n against the yaml keys of the
// struct type t, and those of the mappings below n against their fields'
// types, naming where: the first unknown key is an *Error at its line, with
// the valid keys and the one it is closest to. A field that is a yaml.Node
// (flows) or reads itself (yaml.Unmarshaler) is left to its own checks.
func checkFileKeys(n *yaml.Node, t reflect.Type, where string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == reflect.TypeOf(yaml.Node{}) || reflect.PointerTo(t).Implements(reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()):
		return nil
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for i, c := range n.Content {
			if err := checkFileKeys(c, t.Elem(), fmt.Sprintf("%s[%d]", where, i)); err != nil {
				return err
			}
		}
		return nil
	case t.Kind() != reflect.Struct || n.Kind != yaml.MappingNode:
		return nil // a type mismatch is the decoder's to report
	}
	valid := yamlKeysOf(t)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if !slices.Contains(valid, k.Value) {
			return unknownKey(k, valid, where)
		}
		f, _ := fieldOfKey(t, k.Value)
		path := k.Value
		if where != "" {
			path = where + "." + k.Value
		}
		if err := checkFileKeys(n.Content[i+1], f.Type, path); err != nil {
			return err
		}
	}
	return nil
}

// fieldOfKey is the field of struct type t whose yaml key is key.
func fieldOfKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); tag == key {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

// fileConfig is the YAML form of Config. flows is the policy format of
// policy.go.
type fileConfig struct {
	Listen    *string      `yaml:"listen"`
	Secret    *string      `yaml:"secret"`
	LogLevel  *string      `yaml:"log_level"`
	Timeouts  fileTimeouts `yaml:"timeouts"`
	Store     fileStore    `yaml:"store"`
	KeyPrefix *string      `yaml:"key_prefix"`
	// EntriesRefresh is the YAML form of Config.EntriesRefresh.
	EntriesRefresh *Duration     `yaml:"entries_refresh"`
	DecisionLog    *string       `yaml:"decision_log"`
	Auth           *fileAuth     `yaml:"auth"`
	TLS            *fileTLS      `yaml:"tls"`
	Webhooks       *fileWebhooks `yaml:"webhooks"`
	Flows          yaml.Node     `yaml:"flows"`

	// Challenge is the YAML form of Config.Challenge.
	Challenge *fileChallenge `yaml:"challenge"`
	// Proxy is the YAML form of Config.Proxy.
	Proxy *fileProxy `yaml:"proxy"`
	// Breached is the YAML form of Config.Breached.
	Breached *fileBreached `yaml:"breached"`
}

// fileWebhooks is the YAML form of Webhooks. Secrets come from files, never
// from the config itself.
type fileWebhooks struct {
	Endpoints []fileWebhookEndpoint `yaml:"endpoints"`
	MaxAge    Duration              `yaml:"max_age"`
	Timeout   Duration              `yaml:"timeout"`
}

type fileWebhookEndpoint struct {
	Name          string   `yaml:"name"`
	Tenant        string   `yaml:"tenant"`
	URL           string   `yaml:"url"`
	SecretFile    string   `yaml:"secret_file"`
	Types         []string `yaml:"types"`
	RatePerSecond float64  `yaml:"rate_per_second"`
	Burst         int      `yaml:"burst"`
}

// fileAuth is the YAML form of auth.Config. Key material comes from files
// (a path relative to the working directory), never from the config itself.
type fileAuth struct {
	Audience    string       `yaml:"audience"`
	MaxLifetime Duration     `yaml:"max_lifetime"`
	Leeway      Duration     `yaml:"leeway"`
	Keys        []fileKey    `yaml:"keys"`
	JWKSFile    string       `yaml:"jwks_file"`
	JWKSURL     string       `yaml:"jwks_url"`
	JWKSRefresh Duration     `yaml:"jwks_refresh"`
	JWKSTenants []string     `yaml:"jwks_tenants"` // of jwks_file's and jwks_url's keys
	Tenants     []fileTenant `yaml:"tenants"`
}

type fileTLS struct {
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

type fileKey struct {
	ID            string   `yaml:"id"`
	Alg           string   `yaml:"alg"`
	PublicKeyFile string   `yaml:"public_key_file"`
	SecretFile    string   `yaml:"secret_file"`
	Tenants       []string `yaml:"tenants"`
}

type fileTenant struct {
	Name       string    `yaml:"name"`
	Issuer     string    `yaml:"issuer"`
	SecretFile string    `yaml:"secret_file"`
	Flows      yaml.Node `yaml:"flows"`
}

// authConfig reads the key files of fa and checks the result as auth.New
// would. Its errors are auth.New's *auth.ConfigError or readAuth's own;
// authError words either under the section's name.
func authConfig(fa *fileAuth) (*auth.Config, error) {
	c, err := readAuth(fa)
	if err != nil {
		return nil, err
	}
	if _, err := newVerifier(*c); err != nil {
		return nil, err
	}
	return c, nil
}

// readAuth reads the key files of fa into an auth.Config.
func readAuth(fa *fileAuth) (*auth.Config, error) {
	c := &auth.Config{Audience: fa.Audience, MaxLifetime: time.Duration(fa.MaxLifetime), Leeway: time.Duration(fa.Leeway),
		JWKSURL: fa.JWKSURL, JWKSRefresh: time.Duration(fa.JWKSRefresh), JWKSTenants: fa.JWKSTenants}
	for i, k := range fa.Keys {
		key := auth.Key{ID: k.ID, Alg: k.Alg, Tenants: k.Tenants}
		switch {
		case (k.PublicKeyFile == "") == (k.SecretFile == ""):
			return nil, fmt.Errorf("keys[%d]: give public_key_file (EdDSA, ES256, RS256) or secret_file (HS256)", i)
		case k.PublicKeyFile != "":
			data, err := os.ReadFile(k.PublicKeyFile)
			if err != nil {
				return nil, fmt.Errorf("keys[%d]: %w", i, err)
			}
			if key.Public, err = auth.ParsePublicKeyPEM(data); err != nil {
				return nil, fmt.Errorf("keys[%d]: %s: %w", i, k.PublicKeyFile, err)
			}
		default:
			data, err := os.ReadFile(k.SecretFile)
			if err != nil {
				return nil, fmt.Errorf("keys[%d]: %w", i, err)
			}
			key.Secret = bytes.TrimRight(data, "\r\n")
		}
		c.Keys = append(c.Keys, key)
	}
	if fa.JWKSFile != "" {
		if len(fa.JWKSTenants) == 0 && len(fa.Tenants) > 1 {
			return nil, errors.New("jwks_tenants: name the tenants whose tokens the JWK Set's keys verify")
		}
		data, err := os.ReadFile(fa.JWKSFile)
		if err != nil {
			return nil, fmt.Errorf("jwks_file: %w", err)
		}
		keys, err := auth.ParseJWKS(data)
		if err != nil {
			return nil, fmt.Errorf("jwks_file: %s: %w", fa.JWKSFile, err)
		}
		for i := range keys {
			keys[i].Tenants = fa.JWKSTenants
		}
		c.Keys = append(c.Keys, keys...)
	}
	for _, t := range fa.Tenants {
		c.Tenants = append(c.Tenants, auth.Tenant{Name: t.Name, Issuer: t.Issuer})
	}
	return c, nil
}

type fileStore struct {
	Redis       *fileRedis `yaml:"redis"`
	MemoryLimit *string    `yaml:"memory_limit"`
	HeldIndex   *string    `yaml:"held_index_bytes"`
}

type fileRedis struct {
	URL              string   `yaml:"url"`
	ClusterAddrs     []string `yaml:"cluster_addrs"`
	SentinelAddrs    []string `yaml:"sentinel_addrs"`
	SentinelMaster   string   `yaml:"sentinel_master"`
	SentinelPassword string   `yaml:"sentinel_password"`
	Username         string   `yaml:"username"`
	Password         string   `yaml:"password"`
	TLS              bool     `yaml:"tls"`
	TLSServerName    string   `yaml:"tls_server_name"`
	PoolSize         int      `yaml:"pool_size"`
	Timeout          Duration `yaml:"timeout"`
	SharedRoundTrips *bool    `yaml:"shared_round_trips"`
	ClusterKeyLayout string   `yaml:"cluster_key_layout"`
}

type fileTimeouts struct {
	ReadHeader *Duration `yaml:"read_header"`
	Read       *Duration `yaml:"read"`
	Write      *Duration `yaml:"write"`
	Idle       *Duration `yaml:"idle"`
	Shutdown   *Duration `yaml:"shutdown"`
}

// Parse reads a config file's bytes over the defaults. A mistake is an
// *Error naming its line and its path in the file ("timeouts.read").
func Parse(data []byte) (*Config, error) {
	cfg := Default()
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, syntaxError(err)
	}
	var fc fileConfig
	lines := lineIndex{}
	if len(root.Content) == 1 {
		top := root.Content[0]
		if top.Kind != yaml.MappingNode {
			return nil, errorAt(top.Line, "", "the file must be a mapping of keys (%s)", strings.Join(configKeys, ", "))
		}
		if err := checkFileKeys(top, reflect.TypeOf(fc), ""); err != nil {
			return nil, err
		}
		for i := 0; i+1 < len(top.Content); i += 2 {
			k := top.Content[i].Value
			lines[k] = top.Content[i].Line
			lines.Add(k, top.Content[i+1])
		}
		if err := top.Decode(&fc); err != nil {
			return nil, decodeError("", err).(*Error).At(lines)
		}
	}
	// at is an *Error at path, on its line in the file, else on the line
	// of the nearest key above it that the file wrote.
	at := func(path string, err error) error {
		return (&Error{Path: path, Err: err}).At(lines)
	}
	if fc.Listen != nil {
		if err := checkListen(*fc.Listen); err != nil {
			return nil, at("listen", err)
		}
		cfg.Listen = *fc.Listen
	}
	if fc.Secret != nil {
		if err := checkSecret(*fc.Secret); err != nil {
			return nil, at("secret", err)
		}
		cfg.Secret, cfg.SecretInFile = []byte(*fc.Secret), true
	}
	if fc.LogLevel != nil {
		l, err := parseLogLevel(*fc.LogLevel)
		if err != nil {
			return nil, at("log_level", err)
		}
		cfg.LogLevel = l
	}
	for _, t := range []struct {
		name string
		in   *Duration
		out  *time.Duration
	}{
		{"read_header", fc.Timeouts.ReadHeader, &cfg.Timeouts.ReadHeader},
		{"read", fc.Timeouts.Read, &cfg.Timeouts.Read},
		{"write", fc.Timeouts.Write, &cfg.Timeouts.Write},
		{"idle", fc.Timeouts.Idle, &cfg.Timeouts.Idle},
		{"shutdown", fc.Timeouts.Shutdown, &cfg.Timeouts.Shutdown},
	} {
		if t.in == nil {
			continue
		}
		if d := time.Duration(*t.in); d <= 0 || d > time.Hour {
			return nil, at("timeouts."+t.name, errors.New("must be more than 0s and at most 1h"))
		}
		*t.out = time.Duration(*t.in)
	}

	if r := fc.Store.Redis; r != nil {
		cfg.Redis = &RedisConfig{
			URL: r.URL, ClusterAddrs: r.ClusterAddrs, Username: r.Username, Password: r.Password,
			SentinelAddrs: r.SentinelAddrs, SentinelMaster: r.SentinelMaster, SentinelPassword: r.SentinelPassword,
			TLS: r.TLS, TLSServerName: r.TLSServerName, PoolSize: r.PoolSize, Timeout: time.Duration(r.Timeout),
			DisableSharedRoundTrips: r.SharedRoundTrips != nil && !*r.SharedRoundTrips,
			ClusterKeyLayout:        r.ClusterKeyLayout,
		}
		if err := checkRedis(cfg.Redis); err != nil {
			return nil, at("store.redis", err)
		}
	}
	if m := fc.Store.MemoryLimit; m != nil {
		n, err := ParseBytes(*m)
		if err != nil {
			return nil, at("store.memory_limit", err)
		}
		cfg.MemoryLimit = n
	}
	if m := fc.Store.HeldIndex; m != nil {
		// Not ParseBytes: the memory limit's 16MiB floor is not this bound's;
		// a small index holds fewer entries, which is the operator's choice.
		n, err := humanize.ParseBytes(*m)
		if err != nil || n > 1<<30 {
			return nil, at("store.held_index_bytes", errors.New("must be a size up to 1GiB (0 turns the index off), such as 1MiB"))
		}
		cfg.HeldIndexBytes = int64(n)
	}
	if fc.KeyPrefix != nil {
		if !keyPrefixRE.MatchString(*fc.KeyPrefix) {
			return nil, at("key_prefix", errors.New("must be 1 to 32 letters, digits, '-' or '_'"))
		}
		cfg.KeyPrefix = *fc.KeyPrefix
	}
	if fc.DecisionLog != nil {
		if *fc.DecisionLog == "" {
			return nil, at("decision_log", errors.New("is a file path or stdout"))
		}
		cfg.DecisionLog = *fc.DecisionLog
	}
	if fc.EntriesRefresh != nil {
		if d := time.Duration(*fc.EntriesRefresh); d < 100*time.Millisecond || d > 5*time.Minute {
			return nil, at("entries_refresh", errors.New("must be between 100ms and 5m"))
		}
		cfg.EntriesRefresh = time.Duration(*fc.EntriesRefresh)
	}

	if fc.Auth != nil {
		a, err := authConfig(fc.Auth)
		if err != nil {
			return nil, at("auth", authError(err))
		}
		cfg.Auth = a
		for _, t := range fc.Auth.Tenants {
			if t.SecretFile == "" {
				continue
			}
			data, err := os.ReadFile(t.SecretFile)
			if err != nil {
				return nil, at("auth.tenants["+t.Name+"].secret_file", err)
			}
			secret := bytes.TrimRight(data, "\r\n")
			if err := checkSecret(string(secret)); err != nil {
				return nil, at("auth.tenants["+t.Name+"].secret_file", err)
			}
			if cfg.TenantSecrets == nil {
				cfg.TenantSecrets = map[string][]byte{}
			}
			cfg.TenantSecrets[t.Name] = secret
		}
	}

	if t := fc.TLS; t != nil {
		if t.CertFile == "" || t.KeyFile == "" {
			return nil, at("tls", errors.New("give cert_file and key_file (PEM)"))
		}
		if _, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile); err != nil {
			return nil, at("tls", err)
		}
		cfg.TLS = &TLSConfig{CertFile: t.CertFile, KeyFile: t.KeyFile}
	}

	if fc.Webhooks != nil {
		w, path, err := webhooksConfig(fc.Webhooks)
		if err == nil {
			path, err = checkWebhookTenants(w, fc.Auth)
		}
		if err != nil {
			return nil, at(path, err)
		}
		cfg.Webhooks = w
	}

	if fc.Challenge != nil {
		ch, path, err := challengeConfig(fc.Challenge)
		if err != nil {
			return nil, at(path, err)
		}
		cfg.Challenge = ch
	}

	if fc.Breached != nil {
		b, path, err := breachedConfig(fc.Breached)
		if err != nil {
			return nil, at(path, err)
		}
		cfg.Breached = b
	}

	p, err := policyFromNode(&fc.Flows)
	if err != nil {
		return nil, err
	}
	cfg.Policy = p
	if fc.Auth != nil {
		for _, t := range fc.Auth.Tenants {
			if t.Flows.Kind == 0 {
				continue
			}
			tp, err := tenantPolicy(&fc.Flows, &t.Flows)
			if err != nil {
				return nil, fmt.Errorf("auth: tenant %s: %w", t.Name, err)
			}
			if cfg.TenantPolicies == nil {
				cfg.TenantPolicies = map[string]*authguard.Policy{}
			}
			cfg.TenantPolicies[t.Name] = tp
		}
	}
	if fc.Proxy != nil { // after the policy: its routes name flows
		px, path, err := proxyConfig(fc.Proxy, cfg.Policy, cfg.Listen)
		if err != nil {
			return nil, at(path, err)
		}
		cfg.Proxy = px
	}
	return cfg, nil
}

// ApplyEnv lays the TOLLGATE_* variables over cfg.
func ApplyEnv(cfg *Config, getenv func(string) string) error {
	if v := getenv("TOLLGATE_LISTEN"); v != "" {
		if err := checkListen(v); err != nil {
			return fmt.Errorf("TOLLGATE_LISTEN: %w", err)
		}
		cfg.Listen = v
	}
	secret, err := fromEnvOrFile(getenv, "TOLLGATE_SECRET")
	if err != nil {
		return err
	}
	if secret != "" {
		if err := checkSecret(secret); err != nil {
			return fmt.Errorf("%s: %w", secretVar(getenv, "TOLLGATE_SECRET"), err)
		}
		cfg.Secret, cfg.SecretInFile = []byte(secret), false
	}
	if v := getenv("TOLLGATE_LOG_LEVEL"); v != "" {
		l, err := parseLogLevel(v)
		if err != nil {
			return fmt.Errorf("TOLLGATE_LOG_LEVEL: %w", err)
		}
		cfg.LogLevel = l
	}
	url, cluster, sentinel := getenv("TOLLGATE_REDIS_URL"), getenv("TOLLGATE_REDIS_CLUSTER_ADDRS"), getenv("TOLLGATE_REDIS_SENTINEL_ADDRS")
	if url != "" || cluster != "" || sentinel != "" {
		r := &RedisConfig{}
		if cfg.Redis != nil {
			*r = *cfg.Redis // keep the file's credentials, TLS and timeouts
		}
		r.URL, r.ClusterAddrs, r.SentinelAddrs = url, nil, nil
		if cluster != "" {
			r.ClusterAddrs = strings.Split(cluster, ",")
		}
		if sentinel != "" {
			r.SentinelAddrs = strings.Split(sentinel, ",")
		}
		cfg.Redis = r
	}
	if cfg.Redis != nil {
		if v := getenv("TOLLGATE_REDIS_SENTINEL_MASTER"); v != "" {
			cfg.Redis.SentinelMaster = v
		}
		if v := getenv("TOLLGATE_REDIS_CLUSTER_KEY_LAYOUT"); v != "" {
			cfg.Redis.ClusterKeyLayout = v
		}
	}
	if cfg.Redis != nil {
		if v := getenv("TOLLGATE_REDIS_USERNAME"); v != "" {
			cfg.Redis.Username = v
		}
		password, err := fromEnvOrFile(getenv, "TOLLGATE_REDIS_PASSWORD")
		if err != nil {
			return err
		}
		if password != "" {
			cfg.Redis.Password = password
		}
		if err := checkRedis(cfg.Redis); err != nil {
			return fmt.Errorf("TOLLGATE_REDIS_*: %w", err)
		}
	}
	return nil
}

// fromEnvOrFile is the value of the variable name, or the content of the
// file the variable name_FILE names (its trailing line ends dropped), as
// systemd's LoadCredential=, Docker and Compose secrets and Kubernetes
// Secret volumes hand secrets over; "" when neither is set. Setting both is
// an error: which one wins would be a guess.
func fromEnvOrFile(getenv func(string) string, name string) (string, error) {
	v, path := getenv(name), getenv(name+"_FILE")
	switch {
	case path == "":
		return v, nil
	case v != "":
		return "", fmt.Errorf("%s and %s_FILE are both set: set one", name, name)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s_FILE: %w", name, err)
	}
	return string(bytes.TrimRight(data, "\r\n")), nil
}

// secretVar names the variable a secret came from, for its error.
func secretVar(getenv func(string) string, name string) string {
	if getenv(name+"_FILE") != "" {
		return name + "_FILE"
	}
	return name
}

var keyPrefixRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

func checkRedis(r *RedisConfig) error { return r.Validate() }

// Load reads the file at path (none when empty) and the environment.
func Load(path string, getenv func(string) string) (*Config, error) {
	cfg := Default()
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if cfg, err = Parse(data); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	} else {
		cfg.Policy = DefaultPolicy()
	}
	if err := ApplyEnv(cfg, getenv); err != nil {
		return nil, err
	}
	return cfg, nil
}

func checkListen(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q has no valid port", addr)
	}
	return nil
}

// ErrNotLoopback explains why tollgate will not bind other addresses yet.
var ErrNotLoopback = errors.New("tollgate only listens on loopback addresses (127.0.0.1, ::1, localhost) " +
	"without caller authentication (an auth section in the config file): without it anyone who reaches the port could slow down or reset any account; " +
	"configure auth, or run it next to the auth system")

// CheckListen refuses a listen address that is not loopback unless cfg
// authenticates callers.
func (cfg *Config) CheckListen() error {
	if cfg.Auth != nil {
		return nil
	}
	return CheckLoopback(cfg.Listen)
}

// CheckLoopback refuses any listen address but a loopback one.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		return fmt.Errorf("refusing to listen on %q: %w", addr, ErrNotLoopback)
	}
	return nil
}

func checkSecret(s string) error {
	if len(s) < authguard.MinSecretBytes {
		return fmt.Errorf("must be at least %d bytes (e.g. openssl rand -base64 48)", authguard.MinSecretBytes)
	}
	return nil
}

func parseLogLevel(s string) (slog.Level, error) {
	var l slog.Level
	switch strings.ToLower(s) {
	case "debug", "info", "warn", "error":
		err := l.UnmarshalText([]byte(s))
		return l, err
	}
	return l, fmt.Errorf("%q is not debug, info, warn or error", s)
}

// Memory limits a memory store may be given: below the lower one a shard's
// budget holds a handful of keys; the upper one is past any machine's RAM.
const (
	MinMemoryLimit = 16 << 20
	MaxMemoryLimit = 1 << 40
)

// ParseBytes reads a size such as "320MiB", "1 GiB" or "512000000" (bytes)
// with go-humanize, between MinMemoryLimit and MaxMemoryLimit.
func ParseBytes(s string) (int64, error) {
	n, err := humanize.ParseBytes(s)
	if err != nil || n < MinMemoryLimit || n > MaxMemoryLimit {
		return 0, fmt.Errorf("must be a size between 16MiB and 1TiB, such as 320MiB")
	}
	return int64(n), nil
}
