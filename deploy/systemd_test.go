package deploy

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/internal/config"
)

// The systemd files under test, relative to this package's directory.
const (
	systemdUnitFile   = "systemd/tollgate.service"
	systemdDropIn     = "systemd/redis-password.conf"
	systemdEnvExample = "systemd/tollgate.env.example"
	// systemdMaxExposure is the highest overall exposure
	// `systemd-analyze security` may give the unit (0 best, 10 worst; up to
	// 2.0 systemd calls it "OK").
	systemdMaxExposure = 2.0
)

var errNoSystemdAnalyze = errors.New("deploy: systemd-analyze is not installed (./scripts/ensure-systemd.sh, or apt-get install systemd)")

// requireSystemdAnalyze returns systemd-analyze's path. When it is missing
// the test is skipped on a developer's machine and fails in CI (CI=true), as
// requirePromtool does.
func requireSystemdAnalyze(tb testing.TB) string {
	tb.Helper()
	path, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatal(errNoSystemdAnalyze)
		}
		tb.Skip(errNoSystemdAnalyze)
	}
	return path
}

// buildTollgateForDeploy builds cmd/tollgate into a temporary directory.
func buildTollgateForDeploy(tb testing.TB) string {
	tb.Helper()
	if testing.Short() {
		tb.Skip("builds cmd/tollgate: runs in the full make test, not under -short")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		tb.Skip("no go tool on PATH to build cmd/tollgate")
	}
	bin := filepath.Join(tb.TempDir(), "tollgate")
	out, err := exec.Command(goTool, "build", "-o", bin, "github.com/tollgate-auth/tollgate/cmd/tollgate").CombinedOutput()
	if err != nil {
		tb.Fatalf("go build ./cmd/tollgate: %v\n%s", err, out)
	}
	return bin
}

// systemdUnitDir writes the unit into a new directory for systemd-analyze,
// with ExecStart's /usr/local/bin/tollgate replaced by bin (verify checks that
// the command exists), the drop-ins given in tollgate.service.d/ and extra
// lines appended to the unit. It returns the directory.
func systemdUnitDir(tb testing.TB, bin string, dropIns []string, extra ...string) string {
	tb.Helper()
	data, err := os.ReadFile(systemdUnitFile)
	if err != nil {
		tb.Fatal(err)
	}
	unit := string(data)
	const exec = "\nExecStart=/usr/local/bin/tollgate "
	if strings.Count(unit, exec) != 1 {
		tb.Fatalf("%s: want one line starting %q", systemdUnitFile, strings.TrimSpace(exec))
	}
	unit = strings.Replace(unit, exec, "\nExecStart="+bin+" ", 1)
	for _, l := range extra {
		unit += l + "\n"
	}
	dir := tb.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tollgate.service"), []byte(unit), 0o644); err != nil {
		tb.Fatal(err)
	}
	if len(dropIns) > 0 {
		d := filepath.Join(dir, "tollgate.service.d")
		if err := os.Mkdir(d, 0o755); err != nil {
			tb.Fatal(err)
		}
		for _, f := range dropIns {
			data, err := os.ReadFile(f)
			if err != nil {
				tb.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, filepath.Base(f)), data, 0o644); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return dir
}

// systemdAnalyze runs systemd-analyze on tollgate.service as found in dir
// (first in the unit search path, so that its drop-ins load too) and returns
// its combined output and exit error.
func systemdAnalyze(tb testing.TB, dir string, args ...string) (string, error) {
	tb.Helper()
	cmd := exec.Command(requireSystemdAnalyze(tb), append(args, "tollgate.service")...)
	cmd.Dir = dir
	// The trailing ":" keeps the default search path after dir, for the
	// targets the unit names.
	cmd.Env = append(os.Environ(), "SYSTEMD_UNIT_PATH="+dir+":", "SYSTEMD_PAGER=", "SYSTEMD_COLORS=0")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// systemdVariants are the unit as shipped and with its drop-in installed.
var systemdVariants = []struct {
	name    string
	dropIns []string
}{
	{"unit", nil},
	{"unit+redis-password.conf", []string{systemdDropIn}},
}

// verifyProblems runs systemd-analyze verify and returns what it says about
// the files in dir: an unknown key, a bad value or a missing command is a
// warning on a line naming the file, with exit status 0 for most of them.
func verifyProblems(tb testing.TB, dir string) []string {
	tb.Helper()
	out, err := systemdAnalyze(tb, dir, "verify", "--man=no")
	var problems []string
	for l := range strings.Lines(out) {
		if l = strings.TrimSpace(l); strings.Contains(l, dir) || strings.HasPrefix(l, "tollgate.service") {
			problems = append(problems, l)
		}
	}
	if err != nil && len(problems) == 0 {
		problems = append(problems, fmt.Sprintf("systemd-analyze verify: %v\n%s", err, out))
	}
	return problems
}

func TestSystemdUnit_Verifies(t *testing.T) {
	requireSystemdAnalyze(t)
	bin := buildTollgateForDeploy(t)
	for _, v := range systemdVariants {
		t.Run(v.name, func(t *testing.T) {
			for _, p := range verifyProblems(t, systemdUnitDir(t, bin, v.dropIns)) {
				t.Error(p)
			}
		})
	}
	// The negative control: a misspelt directive, a trailing comment (which
	// systemd takes as part of the value) and a missing binary are reported.
	t.Run("catches mistakes", func(t *testing.T) {
		for _, bad := range []struct{ line, want string }{
			{"ProtectSytem=strict", "Unknown key"},
			{"RestrictNamespaces=yes # no namespaces", "# no namespaces"},
		} {
			problems := verifyProblems(t, systemdUnitDir(t, bin, nil, "[Service]", bad.line))
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, bad.want) }) {
				t.Errorf("%q: verify reported %q, want a line with %q", bad.line, problems, bad.want)
			}
		}
		problems := verifyProblems(t, systemdUnitDir(t, filepath.Join(t.TempDir(), "none"), nil))
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, "not executable") }) {
			t.Errorf("a missing ExecStart binary: verify reported %q", problems)
		}
	})
}

var overallExposure = regexp.MustCompile(`Overall exposure level for tollgate\.service: ([0-9]+(?:\.[0-9]+)?)`)

func TestSystemdUnit_SecurityExposureIsOK(t *testing.T) {
	requireSystemdAnalyze(t)
	for _, v := range systemdVariants {
		t.Run(v.name, func(t *testing.T) {
			// --offline analyses the file alone, no running systemd needed;
			// it does not look for the binary.
			dir := systemdUnitDir(t, "/usr/local/bin/tollgate", v.dropIns)
			out, err := systemdAnalyze(t, dir, "security", "--offline=yes", "--no-pager")
			if err != nil {
				t.Fatalf("systemd-analyze security: %v\n%s", err, out)
			}
			m := overallExposure.FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("no overall exposure in:\n%s", out)
			}
			score, err := strconv.ParseFloat(m[1], 64)
			if err != nil {
				t.Fatal(err)
			}
			var open []string
			for l := range strings.Lines(out) {
				if strings.HasPrefix(l, "✗") {
					open = append(open, strings.Join(strings.Fields(l), " "))
				}
			}
			t.Logf("overall exposure %.1f; not set: %s", score, strings.Join(open, "; "))
			if score > systemdMaxExposure {
				t.Errorf("overall exposure %.1f, want at most %.1f:\n%s", score, systemdMaxExposure, out)
			}
		})
	}
}

// systemdUnit is a unit file's directives by section, each with its values
// in order (a directive may be given more than once).
type systemdUnit map[string]map[string][]string

// parseSystemdUnit reads a unit file or drop-in. It refuses what would make
// the file mean something other than it looks: a continuation line, a
// directive outside a section, a comment after a value.
func parseSystemdUnit(tb testing.TB, path string) systemdUnit {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	u := systemdUnit{}
	section := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
			continue
		case strings.HasSuffix(line, `\`):
			tb.Errorf("%s:%d: a continuation line; keep each directive on one line", path, n)
		case line[0] == '[':
			section = strings.Trim(line, "[]")
			if u[section] == nil {
				u[section] = map[string][]string{}
			}
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok || section == "" {
			tb.Errorf("%s:%d: %q is not a directive in a section", path, n, line)
			continue
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if strings.Contains(value, "#") {
			tb.Errorf("%s:%d: %s=%s: systemd takes a # after a value as part of it; put comments on their own lines", path, n, key, value)
		}
		u[section][key] = append(u[section][key], value)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return u
}

func TestSystemdUnit_HasTheHardeningAndLifeCycleDirectives(t *testing.T) {
	u := parseSystemdUnit(t, systemdUnitFile)
	svc := u["Service"]
	want := map[string][]string{
		"Type":                    {"simple"}, // tollgate does not speak sd_notify
		"ExecStart":               {"/usr/local/bin/tollgate serve"},
		"EnvironmentFile":         {"-/etc/tollgate/tollgate.env"},
		"DynamicUser":             {"yes"},
		"ConfigurationDirectory":  {"tollgate"},
		"LoadCredential":          {"tollgate-secret:/etc/tollgate/secret"},
		"Environment":             {"TOLLGATE_SECRET_FILE=%d/tollgate-secret"},
		"ProtectSystem":           {"strict"},
		"ProtectHome":             {"yes"},
		"PrivateTmp":              {"yes"},
		"PrivateDevices":          {"yes"},
		"PrivateUsers":            {"yes"},
		"NoNewPrivileges":         {"yes"},
		"MemoryDenyWriteExecute":  {"yes"},
		"RestrictAddressFamilies": {"AF_INET AF_INET6 AF_UNIX"},
		"SystemCallFilter":        {"@system-service", "~@privileged @resources"},
		"SystemCallArchitectures": {"native"},
		"CapabilityBoundingSet":   {""},
		"AmbientCapabilities":     {""},
		"LockPersonality":         {"yes"},
		"RestrictNamespaces":      {"yes"},
		"RestrictRealtime":        {"yes"},
		"RestrictSUIDSGID":        {"yes"},
		"ProtectKernelTunables":   {"yes"},
		"ProtectKernelModules":    {"yes"},
		"ProtectKernelLogs":       {"yes"},
		"ProtectControlGroups":    {"yes"},
		"ProtectClock":            {"yes"},
		"ProtectHostname":         {"yes"},
		"ProtectProc":             {"invisible"},
		"ProcSubset":              {"pid"},
		"UMask":                   {"0077"},
		"Restart":                 {"on-failure"},
		"KillSignal":              {"SIGTERM"},
	}
	for key, values := range want {
		if got := svc[key]; !slices.Equal(got, values) {
			t.Errorf("[Service] %s = %q, want %q", key, got, values)
		}
	}
	for _, key := range []string{"RestartSec", "TimeoutStopSec", "LimitNOFILE"} {
		if len(svc[key]) != 1 || svc[key][0] == "" {
			t.Errorf("[Service] %s = %q, want one value", key, svc[key])
		}
	}
	// systemctl reload sends SIGHUP, which reloads the policy (and never
	// ends the process: TestReload_ARealProcessReloadsItsPolicyUnderTrafficAndKeepsItsCounters).
	if got := svc["ExecReload"]; !slices.Equal(got, []string{"/bin/kill -HUP $MAINPID"}) {
		t.Errorf("[Service] ExecReload = %q, want SIGHUP to the main process", got)
	}
	// DynamicUser, not a fixed user; no capability for a port below 1024.
	for _, key := range []string{"User", "Group", "SupplementaryGroups", "Sockets"} {
		if v, ok := svc[key]; ok {
			t.Errorf("[Service] %s = %q, want it absent", key, v)
		}
	}
	if got := u["Install"]["WantedBy"]; !slices.Equal(got, []string{"multi-user.target"}) {
		t.Errorf("[Install] WantedBy = %q, want multi-user.target", got)
	}

	// systemd must wait out tollgate's drain before its SIGKILL.
	if v := svc["TimeoutStopSec"]; len(v) == 1 {
		stop, err := systemdSeconds(v[0])
		if drain := config.Default().Timeouts.Shutdown; err != nil || stop <= drain {
			t.Errorf("TimeoutStopSec=%s (%v): want more than timeouts.shutdown's default %v", v[0], err, drain)
		}
	}
	if v := svc["LimitNOFILE"]; len(v) == 1 {
		if n, err := strconv.Atoi(v[0]); err != nil || n < 4096 {
			t.Errorf("LimitNOFILE=%s: want one number, at least 4096", v[0])
		}
	}
}

// systemdSeconds reads a systemd time span of the forms this unit uses: "30",
// "30s", "1min 30s".
func systemdSeconds(s string) (time.Duration, error) {
	if n, err := strconv.Atoi(s); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	return time.ParseDuration(strings.NewReplacer("min", "m", " ", "").Replace(s))
}

// TestSystemdUnit_SecretsComeAsCredentials checks the unit and its drop-in
// hold no secret: every TOLLGATE_*_FILE variable names a credential of the
// same file, read from /etc/tollgate, and no variable gives a secret's value.
func TestSystemdUnit_SecretsComeAsCredentials(t *testing.T) {
	for _, path := range []string{systemdUnitFile, systemdDropIn} {
		svc := parseSystemdUnit(t, path)["Service"]
		creds := map[string]string{}
		for _, lc := range svc["LoadCredential"] {
			id, src, ok := strings.Cut(lc, ":")
			if !ok || !strings.HasPrefix(src, "/etc/tollgate/") {
				t.Errorf("%s: LoadCredential=%s: want ID:/etc/tollgate/FILE", path, lc)
			}
			creds[id] = src
		}
		files := 0
		for _, env := range svc["Environment"] {
			for _, assignment := range strings.Fields(env) {
				name, value, _ := strings.Cut(assignment, "=")
				switch {
				case name == "TOLLGATE_SECRET_FILE" || name == "TOLLGATE_REDIS_PASSWORD_FILE":
					files++
					id, ok := strings.CutPrefix(value, "%d/")
					if _, loaded := creds[id]; !ok || !loaded {
						t.Errorf("%s: %s=%s: want %%d/ID with LoadCredential=ID:... in the same file", path, name, value)
					}
				case strings.Contains(name, "SECRET") || strings.Contains(name, "PASSWORD") || strings.Contains(name, "TOKEN"):
					t.Errorf("%s: Environment=%s: a secret's value in the unit (use LoadCredential and *_FILE)", path, assignment)
				}
			}
		}
		if files == 0 {
			t.Errorf("%s: no TOLLGATE_*_FILE variable", path)
		}
		checkNoSecretValues(t, path)
	}
	checkNoSecretValues(t, systemdEnvExample)
}

// secretLike matches what openssl rand -hex 16 (or more) and -base64 30 (or
// more) print: key material.
var secretLike = regexp.MustCompile(`\b[0-9a-f]{32,}\b|[A-Za-z0-9+/]{40,}={0,2}`)

// isSecretLike reports whether s, a match of secretLike, is key material: a
// base64 run holds digits and letters of both cases (a path or a rule of
// dashes does not).
func isSecretLike(s string) bool {
	if regexp.MustCompile(`^[0-9a-f]+$`).MatchString(s) {
		return true
	}
	return strings.ContainsAny(s, "0123456789") && strings.ContainsAny(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") &&
		strings.ContainsAny(s, "abcdefghijklmnopqrstuvwxyz")
}

// checkNoSecretValues fails when a file holds what looks like key material
// or assigns a secret by value, in a directive or a comment.
func checkNoSecretValues(tb testing.TB, path string) {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	for n, line := range strings.Split(string(data), "\n") {
		for _, m := range secretLike.FindAllString(line, -1) {
			if isSecretLike(m) {
				tb.Errorf("%s:%d: %q looks like a key", path, n+1, m)
			}
		}
		if regexp.MustCompile(`\bTOLLGATE_(SECRET|REDIS_PASSWORD)=`).MatchString(line) &&
			!strings.Contains(line, "never") && !strings.Contains(line, "unset") {
			tb.Errorf("%s:%d: assigns a secret by value: %s", path, n+1, line)
		}
	}
}

// TestSystemdEnvExample_IsValidAndHoldsNoSecret reads tollgate.env.example
// as systemd does (KEY=VALUE lines) and loads its values, commented or not,
// with tollgate's own parser.
func TestSystemdEnvExample_IsValidAndHoldsNoSecret(t *testing.T) {
	data, err := os.ReadFile(systemdEnvExample)
	if err != nil {
		t.Fatal(err)
	}
	assignment := regexp.MustCompile(`^#?([A-Z][A-Z0-9_]*)=(.*)$`)
	allowed := []string{"TOLLGATE_LISTEN", "TOLLGATE_CONFIG", "TOLLGATE_REDIS_URL", "TOLLGATE_REDIS_CLUSTER_ADDRS",
		"TOLLGATE_REDIS_SENTINEL_ADDRS", "TOLLGATE_REDIS_SENTINEL_MASTER", "TOLLGATE_REDIS_USERNAME", "TOLLGATE_LOG_LEVEL", "GOMEMLIMIT"}
	active := map[string]string{}
	var all [][2]string
	for n, line := range strings.Split(string(data), "\n") {
		m := assignment.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		name, value := m[1], m[2]
		if !slices.Contains(allowed, name) {
			t.Errorf("%s:%d: %s is not one of %q", systemdEnvExample, n+1, name, allowed)
		}
		if strings.ContainsAny(value, `"'$ `) {
			t.Errorf("%s:%d: %s=%s: systemd neither unquotes nor expands here the way a shell does; give the bare value", systemdEnvExample, n+1, name, value)
		}
		if !strings.HasPrefix(line, "#") {
			active[name] = value
		}
		all = append(all, [2]string{name, value})
	}
	if active["TOLLGATE_LISTEN"] == "" {
		t.Errorf("%s: no active TOLLGATE_LISTEN", systemdEnvExample)
	}
	// Every value, active or an example in a comment, is one tollgate takes.
	for _, nv := range all {
		name, value := nv[0], nv[1]
		switch name {
		case "TOLLGATE_CONFIG":
			if !strings.HasPrefix(value, "/etc/tollgate/") {
				t.Errorf("TOLLGATE_CONFIG=%s: want a file in /etc/tollgate (ConfigurationDirectory)", value)
			}
			continue
		case "GOMEMLIMIT":
			continue
		case "TOLLGATE_REDIS_URL":
			if strings.Contains(value, "@") {
				t.Errorf("TOLLGATE_REDIS_URL=%s: a password in the URL; use redis-password.conf", value)
			}
		case "TOLLGATE_LISTEN":
			if _, port, err := splitPort(value); err != nil || port < 1024 {
				t.Errorf("TOLLGATE_LISTEN=%s: want a port of 1024 or more (the unit has no CAP_NET_BIND_SERVICE)", value)
			}
		}
		env := map[string]string{name: value}
		switch name { // the variables that take effect only with others
		case "TOLLGATE_REDIS_SENTINEL_ADDRS":
			env["TOLLGATE_REDIS_SENTINEL_MASTER"] = "tollgate"
		case "TOLLGATE_REDIS_SENTINEL_MASTER":
			env["TOLLGATE_REDIS_SENTINEL_ADDRS"] = "10.0.0.1:26379"
		case "TOLLGATE_REDIS_USERNAME":
			env["TOLLGATE_REDIS_URL"] = "redis://redis.internal:6379/0"
		}
		if _, err := config.Load("", func(k string) string { return env[k] }); err != nil {
			t.Errorf("%s=%s: %v", name, value, err)
		}
	}
}

// splitPort returns the host and port number of host:port.
func splitPort(addr string) (string, int, error) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return "", 0, fmt.Errorf("%q is not host:port", addr)
	}
	port, err := strconv.Atoi(addr[i+1:])
	return addr[:i], port, err
}
