package deploy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.yaml.in/yaml/v3"

	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/testkit"
	"github.com/tollgate-auth/tollgate/internal/testkit/redistest"
)

// The Compose files under test, relative to this package's directory.
const (
	composeFile        = "compose.yaml"
	composeTollgateCfg = "compose/tollgate.yaml"
	composeRedisConf   = "compose/redis.conf"
	composeImage       = "ghcr.io/tollgate-auth/tollgate"
	// composeSecrets is where Compose mounts a service's secrets.
	composeSecrets = "/run/secrets/"
)

// composeSpec is the part of the Compose specification compose.yaml uses.
// It is decoded strictly: a key not here (a typo such as read-only, or a
// setting this test does not know) fails the test.
type composeSpec struct {
	Name      string                       `yaml:"name"`
	XTollgate composeService               `yaml:"x-tollgate"`
	Services  map[string]composeService    `yaml:"services"`
	Secrets   map[string]composeFileSource `yaml:"secrets"`
	Volumes   map[string]*struct{}         `yaml:"volumes"`
}

type composeService struct {
	Image           string                      `yaml:"image"`
	Command         []string                    `yaml:"command"`
	Entrypoint      []string                    `yaml:"entrypoint"`
	User            string                      `yaml:"user"`
	ReadOnly        bool                        `yaml:"read_only"`
	CapDrop         []string                    `yaml:"cap_drop"`
	SecurityOpt     []string                    `yaml:"security_opt"`
	WorkingDir      string                      `yaml:"working_dir"`
	Environment     map[string]string           `yaml:"environment"`
	Volumes         []string                    `yaml:"volumes"`
	Secrets         []string                    `yaml:"secrets"`
	DependsOn       map[string]composeDependsOn `yaml:"depends_on"`
	Healthcheck     *composeHealthcheck         `yaml:"healthcheck"`
	Restart         string                      `yaml:"restart"`
	StopSignal      string                      `yaml:"stop_signal"`
	StopGracePeriod string                      `yaml:"stop_grace_period"`
	MemLimit        string                      `yaml:"mem_limit"`
	Ports           []string                    `yaml:"ports"`
}

type composeDependsOn struct {
	Condition string `yaml:"condition"`
}

type composeHealthcheck struct {
	Test        []string `yaml:"test"`
	Interval    string   `yaml:"interval"`
	Timeout     string   `yaml:"timeout"`
	Retries     int      `yaml:"retries"`
	StartPeriod string   `yaml:"start_period"`
}

type composeFileSource struct {
	File string `yaml:"file"`
}

func loadCompose(tb testing.TB) composeSpec {
	tb.Helper()
	data, err := os.ReadFile(composeFile)
	if err != nil {
		tb.Fatal(err)
	}
	var c composeSpec
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		tb.Fatalf("%s: %v", composeFile, err)
	}
	return c
}

// tollgates returns the services that run tollgate's image, by name.
func (c composeSpec) tollgates() map[string]composeService {
	out := map[string]composeService{}
	for name, s := range c.Services {
		if strings.HasPrefix(s.Image, composeImage+":") {
			out[name] = s
		}
	}
	return out
}

// redisService returns the one service running the official Redis image.
func (c composeSpec) redisService(tb testing.TB) (string, composeService) {
	tb.Helper()
	var names []string
	for name, s := range c.Services {
		if strings.HasPrefix(s.Image, "redis:") {
			names = append(names, name)
		}
	}
	if len(names) != 1 {
		tb.Fatalf("%s: Redis services %q, want one", composeFile, names)
	}
	return names[0], c.Services[names[0]]
}

// composeSecretFile returns the secret that path (/run/secrets/NAME) is, after
// checking that the service mounts it and that it comes from a file under
// compose/secrets/, which git ignores.
func (c composeSpec) composeSecretFile(tb testing.TB, service string, s composeService, path string) string {
	tb.Helper()
	name, ok := strings.CutPrefix(path, composeSecrets)
	if !ok {
		tb.Errorf("%s: %s is not a Compose secret (%sNAME)", service, path, composeSecrets)
		return ""
	}
	if !slices.Contains(s.Secrets, name) {
		tb.Errorf("%s: uses secret %s without mounting it (secrets: %q)", service, name, s.Secrets)
	}
	src, ok := c.Secrets[name]
	if !ok || !strings.HasPrefix(src.File, "./compose/secrets/") {
		tb.Errorf("secret %s: file %q, want one under ./compose/secrets/ (git-ignored)", name, src.File)
	}
	return name
}

// TestCompose_InstancesShareOneSecretAndOneRedis holds compose.yaml to
// README's "Many instances": every instance has the same secret file and the
// same Redis, by reference, never by value.
func TestCompose_InstancesShareOneSecretAndOneRedis(t *testing.T) {
	c := loadCompose(t)
	tgs := c.tollgates()
	if len(tgs) < 2 {
		t.Fatalf("%d tollgate services, want at least 2", len(tgs))
	}
	redisName, redisSvc := c.redisService(t)
	shared := map[string]string{}
	for name, s := range tgs {
		env := s.Environment
		for _, key := range []string{"TOLLGATE_SECRET_FILE", "TOLLGATE_REDIS_URL", "TOLLGATE_REDIS_PASSWORD_FILE", "TOLLGATE_CONFIG", "TOLLGATE_LISTEN"} {
			if env[key] == "" {
				t.Errorf("%s: no %s", name, key)
			}
			if v, seen := shared[key]; seen && v != env[key] {
				t.Errorf("%s: %s=%s, another instance has %s", name, key, env[key], v)
			}
			shared[key] = env[key]
		}
		// The literal forms would put a secret in compose.yaml, in docker
		// inspect and in the process environment.
		for key, value := range env {
			if key == "TOLLGATE_SECRET" || key == "TOLLGATE_REDIS_PASSWORD" || (strings.Contains(key, "SECRET") || strings.Contains(key, "PASSWORD")) && !strings.HasSuffix(key, "_FILE") {
				t.Errorf("%s: %s gives a secret by value; use %s_FILE and a Compose secret", name, key, key)
			}
			if isSecretLike(value) {
				t.Errorf("%s: %s=%s looks like key material", name, key, value)
			}
		}
		c.composeSecretFile(t, name, s, env["TOLLGATE_SECRET_FILE"])
		if pw := c.composeSecretFile(t, name, s, env["TOLLGATE_REDIS_PASSWORD_FILE"]); pw != "" && !slices.Contains(redisSvc.Secrets, pw) {
			t.Errorf("%s reads the Redis password from secret %s, which %s does not mount", name, pw, redisName)
		}
		u, err := url.Parse(env["TOLLGATE_REDIS_URL"])
		if err != nil || u.Scheme != "redis" || u.Hostname() != redisName || u.User != nil {
			t.Errorf("%s: TOLLGATE_REDIS_URL=%s: want redis://%s:6379/N, without a password", name, env["TOLLGATE_REDIS_URL"], redisName)
		}
		if d := s.DependsOn[redisName]; d.Condition != "service_healthy" {
			t.Errorf("%s: depends_on %s %+v, want condition service_healthy", name, redisName, d)
		}
		if want := []string{"serve"}; !slices.Equal(s.Command, want) {
			t.Errorf("%s: command %q, want %q", name, s.Command, want)
		}
	}
	checkNoSecretValues(t, composeFile)
	checkNoSecretValues(t, composeTollgateCfg)
	checkNoSecretValues(t, composeRedisConf)
}

// pinnedTag is an image tag naming a release: v1.2.3 or 7.4.6, optionally
// with a suffix (-bookworm), or a digest.
var pinnedTag = regexp.MustCompile(`^[^:@]+(:v?[0-9]+\.[0-9]+\.[0-9]+(-[a-z0-9.]+)?)?(@sha256:[0-9a-f]{64})?$`)

// TestCompose_ServicesAreHardened checks each service: a pinned image, a
// read-only root file system, a numeric non-root user, no capabilities, no
// privilege escalation, a health check, and ports on the host's loopback
// only (Redis: none).
func TestCompose_ServicesAreHardened(t *testing.T) {
	c := loadCompose(t)
	redisName, _ := c.redisService(t)
	for name, s := range c.Services {
		if !pinnedTag.MatchString(s.Image) || !strings.ContainsAny(s.Image, ":@") || strings.HasSuffix(s.Image, ":latest") {
			t.Errorf("%s: image %q, want a release tag (name:1.2.3) or a digest", name, s.Image)
		}
		if !s.ReadOnly {
			t.Errorf("%s: read_only is not true", name)
		}
		uid, gid, ok := strings.Cut(s.User, ":")
		if n, err := strconv.Atoi(uid); err != nil || n == 0 || !ok || gid == "0" {
			t.Errorf("%s: user %q, want a numeric non-root uid:gid", name, s.User)
		}
		if !slices.Equal(s.CapDrop, []string{"ALL"}) {
			t.Errorf("%s: cap_drop %q, want [ALL]", name, s.CapDrop)
		}
		if !slices.Contains(s.SecurityOpt, "no-new-privileges:true") {
			t.Errorf("%s: security_opt %q, want no-new-privileges:true", name, s.SecurityOpt)
		}
		if h := s.Healthcheck; h == nil || len(h.Test) < 2 || h.Interval == "" || h.Timeout == "" || h.Retries == 0 {
			t.Errorf("%s: healthcheck %+v, want a test, interval, timeout and retries", name, h)
		}
		if s.Restart == "" {
			t.Errorf("%s: no restart policy", name)
		}
		if name == redisName && len(s.Ports) > 0 {
			t.Errorf("%s: publishes %q; only the instances reach Redis", name, s.Ports)
		}
		for _, p := range s.Ports {
			if !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("%s: port %q, want it published on 127.0.0.1 only", name, p)
			}
		}
	}

	env, _, dir := composeEnv(t)
	cfg := loadComposeTollgateConfig(t, env, dir)
	for name, s := range c.tollgates() {
		_, port, err := splitPort(s.Environment["TOLLGATE_LISTEN"])
		if err != nil {
			t.Errorf("%s: TOLLGATE_LISTEN: %v", name, err)
		}
		// The image has no shell: the health check is tollgate's own.
		want := []string{"CMD", "/tollgate", "healthcheck", fmt.Sprintf("http://127.0.0.1:%d/healthz", port)}
		if h := s.Healthcheck; h == nil || !slices.Equal(h.Test, want) {
			t.Errorf("%s: healthcheck %+v, want test %q", name, h, want)
		}
		if len(s.Ports) != 1 || !strings.HasSuffix(s.Ports[0], ":"+strconv.Itoa(port)) {
			t.Errorf("%s: ports %q, want one publishing the listen port %d", name, s.Ports, port)
		}
		if !slices.Contains(s.Volumes, "./"+composeTollgateCfg+":"+s.Environment["TOLLGATE_CONFIG"]+":ro") {
			t.Errorf("%s: volumes %q, want ./%s mounted read-only at TOLLGATE_CONFIG", name, s.Volumes, composeTollgateCfg)
		}
		// Docker's SIGKILL must not cut a drain short.
		grace, err := time.ParseDuration(s.StopGracePeriod)
		if s.StopSignal != "SIGTERM" || err != nil || grace <= cfg.Timeouts.Shutdown {
			t.Errorf("%s: stop_signal %q, stop_grace_period %q: want SIGTERM and more than timeouts.shutdown (%v)", name, s.StopSignal, s.StopGracePeriod, cfg.Timeouts.Shutdown)
		}
	}
}

// composeEnv returns the tollgate instances' environment with every
// /run/secrets/NAME replaced by a file of a fresh random value in a temporary
// directory, and the secrets by name.
func composeEnv(tb testing.TB) (env map[string]string, secrets map[string]string, dir string) {
	tb.Helper()
	c := loadCompose(tb)
	dir = tb.TempDir()
	secrets = map[string]string{}
	for name := range c.Secrets {
		b := make([]byte, 32)
		rand.Read(b)
		secrets[name] = hex.EncodeToString(b)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(secrets[name]+"\n"), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	env = map[string]string{}
	for _, s := range c.tollgates() {
		for k, v := range s.Environment {
			env[k] = strings.ReplaceAll(v, composeSecrets, dir+"/")
		}
	}
	return env, secrets, dir
}

// loadComposeTollgateConfig loads compose/tollgate.yaml with tollgate's own
// parser, as an instance does: its /run/secrets paths moved to composeEnv's
// directory, the environment laid over it.
func loadComposeTollgateConfig(tb testing.TB, env map[string]string, dir string) *config.Config {
	tb.Helper()
	data, err := os.ReadFile(composeTollgateCfg)
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(dir, "tollgate.yaml")
	if err := os.WriteFile(path, bytes.ReplaceAll(data, []byte(composeSecrets), []byte(dir+"/")), 0o644); err != nil {
		tb.Fatal(err)
	}
	cfg, err := config.Load(path, func(k string) string { return env[k] })
	if err != nil {
		tb.Fatalf("%s: %v", composeTollgateCfg, err)
	}
	return cfg
}

// TestCompose_TollgateConfigIsValidAndAuthenticatesCallers loads the
// instances' config as they do and checks what lets them listen on
// 0.0.0.0: an auth section. Without it the same listen address is refused.
func TestCompose_TollgateConfigIsValidAndAuthenticatesCallers(t *testing.T) {
	env, secrets, dir := composeEnv(t)
	cfg := loadComposeTollgateConfig(t, env, dir)
	if cfg.Auth == nil || len(cfg.Auth.Keys) == 0 || len(cfg.Auth.Tenants) == 0 {
		t.Fatalf("auth %+v, want keys and tenants", cfg.Auth)
	}
	if cfg.Listen != "0.0.0.0:8080" {
		t.Errorf("listen %q, want 0.0.0.0:8080 (from TOLLGATE_LISTEN)", cfg.Listen)
	}
	if err := cfg.CheckListen(); err != nil {
		t.Errorf("CheckListen: %v", err)
	}
	c := loadCompose(t)
	var s composeService
	for _, s = range c.tollgates() {
		break
	}
	secretName, _ := strings.CutPrefix(s.Environment["TOLLGATE_SECRET_FILE"], composeSecrets)
	if string(cfg.Secret) != secrets[secretName] {
		t.Errorf("the secret is not TOLLGATE_SECRET_FILE's content (the %s secret)", secretName)
	}
	passName, _ := strings.CutPrefix(s.Environment["TOLLGATE_REDIS_PASSWORD_FILE"], composeSecrets)
	if cfg.Redis == nil || cfg.Redis.URL != s.Environment["TOLLGATE_REDIS_URL"] || cfg.Redis.Password != secrets[passName] {
		t.Errorf("Redis %+v, want TOLLGATE_REDIS_URL with TOLLGATE_REDIS_PASSWORD_FILE's content", cfg.Redis)
	}

	// The negative control: the same file without auth may not listen there.
	var doc map[string]any
	data, _ := os.ReadFile(composeTollgateCfg)
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	delete(doc, "auth")
	noAuth, _ := yaml.Marshal(doc)
	bare, err := config.Parse(noAuth)
	if err != nil {
		t.Fatal(err)
	}
	bare.Listen = cfg.Listen
	if bare.CheckListen() == nil {
		t.Error("without auth, listening on 0.0.0.0:8080 was allowed")
	}
}

// redisConf reads redis.conf's directives (the last value of each wins, as
// in Redis).
func redisConf(tb testing.TB) map[string]string {
	tb.Helper()
	data, err := os.ReadFile(composeRedisConf)
	if err != nil {
		tb.Fatal(err)
	}
	conf := map[string]string{}
	for l := range strings.Lines(string(data)) {
		if f := strings.Fields(l); len(f) > 0 && !strings.HasPrefix(f[0], "#") {
			conf[strings.ToLower(f[0])] = strings.Join(f[1:], " ")
		}
	}
	return conf
}

// redisScript returns the shell script Redis's service runs (entrypoint sh
// -c SCRIPT) as the shell gets it: Compose has turned each $$ into $.
func redisScript(tb testing.TB, s composeService) string {
	tb.Helper()
	if len(s.Entrypoint) != 3 || s.Entrypoint[0] != "sh" || s.Entrypoint[1] != "-c" {
		tb.Fatalf("redis: entrypoint %q, want [sh -c SCRIPT]", s.Entrypoint)
	}
	return strings.ReplaceAll(s.Entrypoint[2], "$$", "$")
}

// TestCompose_RedisKeepsCountersAndHasAPassword holds Redis to README's
// "Redis memory: policy and size" and "Operating it": noeviction, an
// append-only file on a volume, and a password that is in no committed file.
func TestCompose_RedisKeepsCountersAndHasAPassword(t *testing.T) {
	c := loadCompose(t)
	name, s := c.redisService(t)
	conf := redisConf(t)
	for key, want := range map[string]string{"maxmemory-policy": "noeviction", "appendonly": "yes"} {
		if conf[key] != want {
			t.Errorf("%s: %s %q, want %q", composeRedisConf, key, conf[key], want)
		}
	}
	if conf["maxmemory"] == "" {
		t.Errorf("%s: no maxmemory: size Redis (README's table)", composeRedisConf)
	}
	for _, key := range []string{"requirepass", "dir", "aclfile", "user"} {
		if v, ok := conf[key]; ok {
			t.Errorf("%s: %s %q: the password comes from the secret, the directory from working_dir", composeRedisConf, key, v)
		}
	}
	script := redisScript(t, s)
	if !slices.Contains(s.Volumes, "./"+composeRedisConf+":/usr/local/etc/redis/redis.conf:ro") || !strings.Contains(script, "redis-server /usr/local/etc/redis/redis.conf -") {
		t.Errorf("%s: want ./%s mounted read-only and read by redis-server, with the rest from stdin (-)", name, composeRedisConf)
	}
	if !slices.ContainsFunc(s.Volumes, func(v string) bool { return strings.HasSuffix(v, ":"+s.WorkingDir) && !strings.HasPrefix(v, ".") }) || s.WorkingDir == "" {
		t.Errorf("%s: volumes %q, working_dir %q: want a named volume at the working directory, where the append-only file goes", name, s.Volumes, s.WorkingDir)
	}
	if len(s.Secrets) != 1 || !strings.Contains(script, composeSecrets+s.Secrets[0]) || !strings.Contains(script, "requirepass") {
		t.Errorf("%s: want requirepass from its one secret %q, in %q", name, s.Secrets, script)
	}
	if h := s.Healthcheck; h == nil || h.Test[0] != "CMD-SHELL" || !strings.Contains(h.Test[1], "REDISCLI_AUTH=") || !strings.Contains(h.Test[1], "redis-cli ping") {
		t.Errorf("%s: healthcheck %+v, want an authenticated redis-cli ping", name, s.Healthcheck)
	}
}

// freeLoopbackPort returns a port nothing listens on now.
func freeLoopbackPort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// composeRedis is Redis started from compose.yaml's own script and
// redis.conf, on a loopback port.
type composeRedis struct {
	addr, password, secretFile, port string
	cmd                              *exec.Cmd
	dataDir                          string
	healthcheck                      string // the health check's script, for this server
}

// startComposeRedis runs compose.yaml's Redis entrypoint script with its
// container paths moved into temporary directories: the redis.conf of the
// repository, a password secret, the data directory as the working directory.
// Only the port and bind address are added, for the test.
func startComposeRedis(tb testing.TB) *composeRedis {
	tb.Helper()
	redistest.Require(tb)
	c := loadCompose(tb)
	_, s := c.redisService(tb)
	script := redisScript(tb, s)
	b := make([]byte, 32)
	rand.Read(b)
	r := &composeRedis{password: hex.EncodeToString(b), dataDir: tb.TempDir(), port: strconv.Itoa(freeLoopbackPort(tb))}
	r.addr = "127.0.0.1:" + r.port
	secrets := tb.TempDir()
	r.secretFile = filepath.Join(secrets, s.Secrets[0])
	if err := os.WriteFile(r.secretFile, []byte(r.password+"\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	conf, err := filepath.Abs(composeRedisConf)
	if err != nil {
		tb.Fatal(err)
	}
	script = strings.ReplaceAll(script, composeSecrets, secrets+"/")
	script = strings.Replace(script, "redis-server /usr/local/etc/redis/redis.conf ",
		"redis-server "+conf+" --port "+r.port+" --bind 127.0.0.1 ", 1)
	r.healthcheck = strings.ReplaceAll(strings.ReplaceAll(s.Healthcheck.Test[1], "$$", "$"), composeSecrets, secrets+"/")
	r.healthcheck = strings.Replace(r.healthcheck, "redis-cli ", "redis-cli -p "+r.port+" ", 1)

	r.cmd = exec.Command("sh", "-c", script)
	r.cmd.Dir = r.dataDir
	var logs bytes.Buffer
	r.cmd.Stdout, r.cmd.Stderr = &logs, &logs
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { r.cmd.Wait(); close(exited) }()
	tb.Cleanup(func() {
		r.cmd.Process.Kill()
		<-exited
		if tb.Failed() {
			tb.Logf("redis-server's log:\n%s", logs.String())
		}
	})
	client := redis.NewClient(&redis.Options{Addr: r.addr, Password: r.password, MaxRetries: -1})
	defer client.Close()
	var died bool
	answered := testkit.Eventually(5*time.Second, func() bool {
		select {
		case <-exited:
			died = true
			return true
		default:
		}
		return client.Ping(context.Background()).Err() == nil
	})
	switch {
	case died:
		tb.Fatalf("redis-server exited: %v\n%s", r.cmd.ProcessState, logs.String())
	case !answered:
		tb.Fatalf("redis-server did not answer within 5s:\n%s", logs.String())
	}
	return r
}

// TestCompose_RedisStartsWithItsConfigAndPassword runs the Redis of
// compose.yaml for real (redis-server from the system's packages): the
// password from the secret is required and is not on its command line, the
// config's policy holds, the health check passes only with the password.
func TestCompose_RedisStartsWithItsConfigAndPassword(t *testing.T) {
	r := startComposeRedis(t)
	ctx := context.Background()

	anon := redis.NewClient(&redis.Options{Addr: r.addr, MaxRetries: -1})
	defer anon.Close()
	if err := anon.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("PING without the password: %v, want NOAUTH", err)
	}
	client := redis.NewClient(&redis.Options{Addr: r.addr, Password: r.password, MaxRetries: -1})
	defer client.Close()
	for key, want := range map[string]string{"maxmemory-policy": "noeviction", "appendonly": "yes", "dir": r.dataDir} {
		got, err := client.ConfigGet(ctx, key).Result()
		if err != nil || got[key] != want {
			t.Errorf("CONFIG GET %s: %v %v, want %q", key, got, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(r.dataDir, "appendonlydir")); err != nil {
		t.Errorf("no append-only file in the working directory: %v", err)
	}
	// exec: the shell became redis-server, which gets Docker's SIGTERM.
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", r.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	if !strings.HasPrefix(args[0], "redis-server") || strings.Contains(string(cmdline), r.password) {
		t.Errorf("PID 1's command line %q: want redis-server's, without the password", args)
	}
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", r.cmd.Process.Pid))
	if err == nil && strings.Contains(string(environ), r.password) {
		t.Error("redis-server's environment holds the password")
	}

	if out, err := exec.Command("sh", "-c", r.healthcheck).CombinedOutput(); err != nil {
		t.Errorf("the health check failed on a healthy Redis: %v %s", err, out)
	}
	if err := os.WriteFile(r.secretFile, []byte("not-the-password\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("sh", "-c", r.healthcheck).CombinedOutput(); err == nil {
		t.Errorf("the health check passed with a wrong password: %s", out)
	}
}

// TestCompose_TollgateRunsAsComposeRunsIt starts the real binary with an
// instance's environment and config (the secrets moved to temporary files,
// the listen address to a loopback port) against compose.yaml's Redis, and
// runs the container's health check: ready on Redis with the password, /v1
// calls refused without a token and answered with one, SIGTERM exits 0.
func TestCompose_TollgateRunsAsComposeRunsIt(t *testing.T) {
	r := startComposeRedis(t)
	bin := buildTollgateForDeploy(t)
	env, _, dir := composeEnv(t)
	c := loadCompose(t)
	var svc composeService
	for _, svc = range c.tollgates() {
		break
	}
	passName, _ := strings.CutPrefix(svc.Environment["TOLLGATE_REDIS_PASSWORD_FILE"], composeSecrets)
	if err := os.WriteFile(filepath.Join(dir, passName), []byte(r.password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(composeTollgateCfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "tollgate.yaml")
	if err := os.WriteFile(cfgPath, bytes.ReplaceAll(data, []byte(composeSecrets), []byte(dir+"/")), 0o644); err != nil {
		t.Fatal(err)
	}
	port := freeLoopbackPort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	env["TOLLGATE_CONFIG"] = cfgPath
	env["TOLLGATE_LISTEN"] = fmt.Sprintf("127.0.0.1:%d", port)
	env["TOLLGATE_REDIS_URL"] = "redis://" + r.addr + "/0"
	environ := []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}

	cmd := exec.Command(bin, svc.Command...)
	cmd.Env = environ
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Kill()
		if t.Failed() {
			t.Logf("tollgate's log:\n%s", logs.String())
		}
	}()

	// The container's health check, as Docker runs it (the URL's port moved).
	hc := slices.Clone(svc.Healthcheck.Test[1:])
	hc[len(hc)-1] = strings.Replace(hc[len(hc)-1], "127.0.0.1:8080", fmt.Sprintf("127.0.0.1:%d", port), 1)
	var hcErr, exitErr error
	var hcOut []byte
	died := false
	testkit.Eventually(10*time.Second, func() bool {
		select {
		case exitErr = <-exited:
			died = true
			return true
		default:
		}
		hcCmd := exec.Command(strings.Replace(hc[0], "/tollgate", bin, 1), hc[1:]...)
		hcOut, hcErr = hcCmd.CombinedOutput()
		return hcErr == nil
	})
	if died {
		t.Fatalf("tollgate exited: %v", exitErr)
	}
	if hcErr != nil {
		t.Fatalf("health check %q: %v %s", hc, hcErr, hcOut)
	}

	get := func(path string, header http.Header, body string) int {
		t.Helper()
		method := http.MethodGet
		if body != "" {
			method = http.MethodPost
		}
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header = header
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("/readyz", http.Header{}, ""); code != http.StatusOK {
		t.Errorf("/readyz: %d, want 200 (Redis reached with the password file)", code)
	}
	check := `{"flow":"login","account":"alice@example.com","ip":"203.0.113.7"}`
	jsonHeader := http.Header{"Content-Type": {"application/json"}}
	if code := get("/v1/check", jsonHeader, check); code != http.StatusUnauthorized {
		t.Errorf("/v1/check without a token: %d, want 401", code)
	}
	// The token tollgate.yaml's comment tells how to mint.
	keyName := "tollgate_hs256"
	tok, err := exec.Command(bin, "token", "-key", filepath.Join(dir, keyName), "-alg", "HS256", "-kid", "compose",
		"-config", cfgPath, "-tenant", "app").Output()
	if err != nil {
		t.Fatalf("tollgate token: %v", err)
	}
	authed := jsonHeader.Clone()
	authed.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	if code := get("/v1/check", authed, check); code != http.StatusOK {
		t.Errorf("/v1/check with a token: %d, want 200", code)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("after SIGTERM: %v, want exit 0", err)
		}
	case <-time.After(25 * time.Second):
		t.Error("tollgate did not exit within 25s of SIGTERM")
	}
}

// TestCompose_SecretCheckCatchesGeneratedKeys is the negative control of
// isSecretLike: what the documented openssl commands print is caught.
func TestCompose_SecretCheckCatchesGeneratedKeys(t *testing.T) {
	for range 20 {
		b := make([]byte, 48)
		rand.Read(b)
		for _, s := range []string{base64.StdEncoding.EncodeToString(b), hex.EncodeToString(b[:32])} {
			m := secretLike.FindString("TOLLGATE_SECRET: " + s)
			if m == "" || !isSecretLike(m) {
				t.Errorf("%q not caught", s)
			}
		}
	}
}

// TestCompose_ConfigValidatesWithDockerCompose runs `docker compose config
// -q` when a Compose CLI is installed (it needs no engine), on a copy with
// generated secrets.
func TestCompose_ConfigValidatesWithDockerCompose(t *testing.T) {
	var compose []string
	if exec.Command("docker", "compose", "version").Run() == nil {
		compose = []string{"docker", "compose"}
	} else if _, err := exec.LookPath("docker-compose"); err == nil {
		compose = []string{"docker-compose"}
	} else {
		t.Skip("no docker compose or docker-compose CLI; the structural checks above still ran")
	}
	dir := t.TempDir()
	for _, f := range []string{composeFile, composeTollgateCfg, composeRedisConf} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "compose", "secrets"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, src := range loadCompose(t).Secrets {
		if err := os.WriteFile(filepath.Join(dir, src.File), []byte(name+"-test-value-of-at-least-32-bytes\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := append(compose[1:], "-f", filepath.Join(dir, composeFile), "config", "-q")
	if out, err := exec.Command(compose[0], args...).CombinedOutput(); err != nil {
		t.Errorf("%s: %v\n%s", strings.Join(append(compose[:1], args...), " "), err, out)
	}
}
