package deploy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"

	"github.com/tollgate-auth/tollgate/api"
	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/authguard/memstore"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/webhook"
)

// The files under test, relative to this package's directory (go test's
// working directory).
const (
	alertsFile     = "prometheus/alerts.yaml"
	alertsTestFile = "prometheus/alerts_test.yaml"
	dashboardFile  = "grafana/tollgate.json"
	// runbookPrefix is where every alert's runbook_url points: a section
	// of README.md or of a file of docs/, named after it.
	runbookPrefix = "https://github.com/tollgate-auth/tollgate/blob/main/"
)

// errNoPromtool means promtool is not on PATH.
var errNoPromtool = errors.New("deploy: promtool is not installed (./scripts/ensure-promtool.sh, or apt-get install prometheus)")

// requirePromtool returns promtool's path. When it is not installed the
// test is skipped on a developer's machine and fails in CI (CI=true), as
// redistest.Require does for Redis, so a missing install never passes
// silently.
func requirePromtool(tb testing.TB) string {
	tb.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatal(errNoPromtool)
		}
		tb.Skip(errNoPromtool)
	}
	return path
}

// promtool runs promtool with args and fails the test, with its output,
// when it exits non-zero.
func promtool(tb testing.TB, args ...string) string {
	tb.Helper()
	out, err := exec.Command(requirePromtool(tb), args...).CombinedOutput()
	if err != nil {
		tb.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestAlerts_CheckRules: promtool accepts alerts.yaml (syntax, PromQL,
// templates).
func TestAlerts_CheckRules(t *testing.T) {
	t.Log(promtool(t, "check", "rules", alertsFile))
}

// TestAlerts_UnitTests: every alert fires on the input series meant to
// fire it, with the labels and annotations written out, and stays silent
// on the others (promtool test rules alerts_test.yaml).
func TestAlerts_UnitTests(t *testing.T) {
	if testing.Short() {
		t.Skip("promtool evaluates every alert's test series: runs in the full make test, not under -short")
	}
	t.Log(promtool(t, "test", "rules", alertsTestFile))
}

// ruleFile is a Prometheus rule file.
type ruleFile struct {
	Groups []ruleGroup `yaml:"groups"`
}

type ruleGroup struct {
	Name  string `yaml:"name"`
	Rules []rule `yaml:"rules"`
}

type rule struct {
	Alert       string            `yaml:"alert,omitempty"`
	Record      string            `yaml:"record,omitempty"`
	Expr        string            `yaml:"expr"`
	Labels      map[string]string `yaml:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty"`
}

func loadAlerts(tb testing.TB) []rule {
	tb.Helper()
	b, err := os.ReadFile(alertsFile)
	if err != nil {
		tb.Fatal(err)
	}
	var f ruleFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		tb.Fatalf("%s: %v", alertsFile, err)
	}
	var rules []rule
	for _, g := range f.Groups {
		rules = append(rules, g.Rules...)
	}
	if len(rules) == 0 {
		tb.Fatalf("%s has no rules", alertsFile)
	}
	return rules
}

// TestAlerts_EveryAlertIsDocumentedAndTested: each alert has a severity, a
// summary, a description and a runbook_url to a section of README.md or
// docs/ that exists, and alerts_test.yaml shows it firing and not firing. (promtool
// passes a test of an alert name that does not exist when it expects no
// alert, so the names are checked here.)
func TestAlerts_EveryAlertIsDocumentedAndTested(t *testing.T) {
	b, err := os.ReadFile(alertsTestFile)
	if err != nil {
		t.Fatal(err)
	}
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string           `yaml:"alertname"`
				ExpAlerts []map[string]any `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(b, &tests); err != nil {
		t.Fatalf("%s: %v", alertsTestFile, err)
	}
	fires, silent := map[string]int{}, map[string]int{}
	for _, tc := range tests.Tests {
		for _, at := range tc.AlertRuleTest {
			if len(at.ExpAlerts) > 0 {
				fires[at.Alertname]++
			} else {
				silent[at.Alertname]++
			}
		}
	}
	alerts := map[string]bool{}
	for _, r := range loadAlerts(t) {
		if r.Alert == "" {
			continue
		}
		alerts[r.Alert] = true
		if s := r.Labels["severity"]; s != "warning" && s != "critical" {
			t.Errorf("%s: severity %q, want warning or critical", r.Alert, s)
		}
		for _, k := range []string{"summary", "description", "runbook_url"} {
			if strings.TrimSpace(r.Annotations[k]) == "" {
				t.Errorf("%s has no %s annotation", r.Alert, k)
			}
		}
		doc, anchor, _ := strings.Cut(strings.TrimPrefix(r.Annotations["runbook_url"], runbookPrefix), "#")
		if !strings.HasPrefix(r.Annotations["runbook_url"], runbookPrefix) || !(doc == "README.md" || path.Dir(doc) == "docs" && path.Ext(doc) == ".md") ||
			!docAnchors(t, "../"+doc)[anchor] {
			t.Errorf("%s: runbook_url %q is not a section of README.md or docs/*.md (%sFILE#ANCHOR)", r.Alert, r.Annotations["runbook_url"], runbookPrefix)
		}
		if fires[r.Alert] == 0 || silent[r.Alert] == 0 {
			t.Errorf("%s: %s has %d cases where it fires and %d where it does not; want at least one of each",
				r.Alert, alertsTestFile, fires[r.Alert], silent[r.Alert])
		}
	}
	for name := range fires {
		if !alerts[name] {
			t.Errorf("%s tests alert %s, which %s does not have", alertsTestFile, name, alertsFile)
		}
	}
	for name := range silent {
		if !alerts[name] {
			t.Errorf("%s tests alert %s, which %s does not have", alertsTestFile, name, alertsFile)
		}
	}
}

// docAnchors returns the anchors GitHub gives a Markdown file's headings,
// none when it does not exist.
func docAnchors(tb testing.TB, file string) map[string]bool {
	tb.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	anchors := map[string]bool{}
	fenced := false
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\n")
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if text, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " "); ok && strings.HasPrefix(line, "#") {
			anchors[githubAnchor(text)] = true
		}
	}
	return anchors
}

// githubAnchor is the anchor GitHub gives a heading: lower case, spaces to
// hyphens, punctuation other than hyphens and underscores dropped.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// dashboard is the part of Grafana's JSON model the tests read.
type dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []variable `json:"list"`
	} `json:"templating"`
}

// variable is a template variable; Definition is a query variable's query.
type variable struct {
	Name       string `json:"name"`
	Type       string `json:"type"`
	Definition string `json:"definition"`
}

type panel struct {
	ID          int         `json:"id"`
	Type        string      `json:"type"`
	Title       string      `json:"title"`
	Description string      `json:"description"`
	Datasource  *datasource `json:"datasource"`
	Targets     []struct {
		RefID      string      `json:"refId"`
		Expr       string      `json:"expr"`
		Datasource *datasource `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// dsVariable is the data source every panel and query uses: the
// dashboard's DS_PROMETHEUS variable.
const dsVariable = "${DS_PROMETHEUS}"

func loadDashboard(tb testing.TB) dashboard {
	tb.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		tb.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		tb.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// panels returns every panel, rows and the panels of collapsed rows
// included, in order.
func (d dashboard) panels() []panel {
	var all []panel
	for _, p := range d.Panels {
		all = append(all, p)
		all = append(all, p.Panels...)
	}
	return all
}

// TestDashboard_EveryPanelHasATitleADescriptionAndAQuery: the dashboard is
// JSON; every row has a title; every other panel has a title, a description
// (what to look for) and at least one query, all on the DS_PROMETHEUS data
// source variable; panel ids are unique.
func TestDashboard_EveryPanelHasATitleADescriptionAndAQuery(t *testing.T) {
	d := loadDashboard(t)
	if d.Title == "" || d.UID == "" {
		t.Errorf("dashboard title %q, uid %q: want both", d.Title, d.UID)
	}
	if !slices.Contains(d.Templating.List, variable{Name: "DS_PROMETHEUS", Type: "datasource"}) {
		t.Errorf("no datasource variable DS_PROMETHEUS")
	}
	ids := map[int]string{}
	rows, queries := 0, 0
	for _, p := range d.panels() {
		if other, dup := ids[p.ID]; dup {
			t.Errorf("panels %q and %q share id %d", other, p.Title, p.ID)
		}
		ids[p.ID] = p.Title
		if strings.TrimSpace(p.Title) == "" {
			t.Errorf("panel %d (%s) has no title", p.ID, p.Type)
		}
		if p.Type == "row" {
			rows++
			continue
		}
		if strings.TrimSpace(p.Description) == "" {
			t.Errorf("panel %q has no description", p.Title)
		}
		if p.Datasource == nil || p.Datasource.UID != dsVariable {
			t.Errorf("panel %q: datasource %+v, want uid %s", p.Title, p.Datasource, dsVariable)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			queries++
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q, query %s: no expr", p.Title, tg.RefID)
			}
			if tg.Datasource == nil || tg.Datasource.UID != dsVariable {
				t.Errorf("panel %q, query %s: datasource %+v, want uid %s", p.Title, tg.RefID, tg.Datasource, dsVariable)
			}
		}
	}
	if rows == 0 || queries == 0 {
		t.Errorf("%d rows and %d queries; want some of each", rows, queries)
	}
}

// grafanaIntervals are the interval variables Grafana replaces in a query
// before Prometheus sees it.
var grafanaIntervals = regexp.MustCompile(`\$\{?__(rate_interval|interval|range)\}?`)

// TestDashboard_QueriesParse: every panel's query is valid PromQL once
// Grafana has replaced its interval variables (the label variables sit in
// label matchers' strings). promtool checks them as recording rules.
func TestDashboard_QueriesParse(t *testing.T) {
	requirePromtool(t)
	f := ruleFile{Groups: []ruleGroup{{Name: "dashboard"}}}
	for _, p := range loadDashboard(t).panels() {
		for _, tg := range p.Targets {
			f.Groups[0].Rules = append(f.Groups[0].Rules, rule{
				Record: fmt.Sprintf("dashboard:panel_%d_%s", p.ID, tg.RefID),
				Expr:   grafanaIntervals.ReplaceAllString(tg.Expr, "5m"),
			})
		}
	}
	b, err := yaml.Marshal(&f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dashboard-queries.yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Log(promtool(t, "check", "rules", path))
}

// metricPrefixes are the metric names the tests look for in queries: what
// tollgate's registry serves (its own, and the Go runtime and process
// collectors').
var metricPrefixes = []string{"tollgate_", "go_", "process_"}

// metricNames returns the metric names in a PromQL query (or a Grafana
// label_values(...) variable query) that start with one of
// metricPrefixes: identifiers outside string literals and comments.
// Grafana variables ($job, ${__rate_interval}) and number and duration
// literals (5m, 1e3) are skipped.
func metricNames(expr string) []string {
	var names []string
	isIdentStart := func(c byte) bool { return c == '_' || c == ':' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
	isIdent := func(c byte) bool { return isIdentStart(c) || '0' <= c && c <= '9' }
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i++
			for i < len(expr) && expr[i] != c {
				if expr[i] == '\\' && c != '`' {
					i++
				}
				i++
			}
			i++
		case c == '#':
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case c == '$':
			i++
			if i < len(expr) && expr[i] == '{' {
				for i < len(expr) && expr[i] != '}' {
					i++
				}
				i++
				continue
			}
			for i < len(expr) && isIdent(expr[i]) {
				i++
			}
		case '0' <= c && c <= '9' || c == '.':
			for i < len(expr) && (isIdent(expr[i]) || expr[i] == '.') {
				i++
			}
		case isIdentStart(c):
			j := i
			for j < len(expr) && isIdent(expr[j]) {
				j++
			}
			name := expr[i:j]
			if slices.ContainsFunc(metricPrefixes, func(p string) bool { return strings.HasPrefix(name, p) }) {
				names = append(names, name)
			}
			i = j
		default:
			i++
		}
	}
	return names
}

// usedMetrics returns the metric names the dashboard's queries and
// variables and the alerting rules use, each with where it is used.
func usedMetrics(tb testing.TB) map[string][]string {
	tb.Helper()
	used := map[string][]string{}
	add := func(where, expr string) {
		for _, n := range metricNames(expr) {
			if !slices.Contains(used[n], where) {
				used[n] = append(used[n], where)
			}
		}
	}
	d := loadDashboard(tb)
	for _, p := range d.panels() {
		for _, tg := range p.Targets {
			add(fmt.Sprintf("%s panel %q", dashboardFile, p.Title), tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		add(fmt.Sprintf("%s variable %s", dashboardFile, v.Name), v.Definition)
	}
	for _, r := range loadAlerts(tb) {
		add(fmt.Sprintf("%s alert %s", alertsFile, r.Alert), r.Expr)
	}
	return used
}

// exportedMetrics is what tollgate's /metrics serves.
type exportedMetrics struct {
	// families are the names of every metric family registered on the
	// registry /metrics serves, from its descriptors: a family appears in a
	// scrape as soon as it has a series, and one without any (a CounterVec
	// nobody has incremented yet) is still exported.
	families map[string]bool
	// types are the families' types as a scrape shows them (only
	// families with series).
	types map[string]string
}

// histogramSeries are the suffixes of a histogram's series.
var histogramSeries = []string{"_bucket", "_sum", "_count"}

// problem says what is wrong with a metric name used in a query, or ""
// when tollgate exports it: a family's name, or a series of a histogram
// (name_bucket, _sum, _count). A histogram's own name selects nothing, so
// a query that uses it is wrong too.
func (e exportedMetrics) problem(name string) string {
	if e.families[name] {
		if t := e.types[name]; t == "histogram" || t == "summary" {
			return "is a " + t + ", which has no series of that name; use its _bucket, _sum or _count"
		}
		return ""
	}
	for _, suffix := range histogramSeries {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok || !e.families[base] {
			continue
		}
		switch t := e.types[base]; t {
		case "histogram", "summary":
			return ""
		case "":
			return fmt.Sprintf("has suffix %s, but %s is not in the scrape to tell whether it is a histogram", suffix, base)
		default:
			return fmt.Sprintf("has suffix %s, but %s is a %s, not a histogram", suffix, base, t)
		}
	}
	return "is not a metric tollgate exports"
}

// descriptorName reads a descriptor's fully-qualified name from its String
// form, the only place client_golang shows it.
var descriptorName = regexp.MustCompile(`^Desc\{fqName: ("(?:[^"\\]|\\.)*")`)

// tollgateMetrics builds tollgate as `tollgate serve` does on the memory
// store — api.NewMetrics over the built-in policy, both memory stores added,
// the engine observed and added — drives a check and a code send through its HTTP
// API, and returns what its /metrics exports: the names of all the
// families registered on the registry the API serves (Registry().Describe),
// with the types a scrape of GET /metrics shows. It fails unless every
// family in the scrape is among the described ones, which shows that the
// registry described is the one /metrics serves.
func tollgateMetrics(tb testing.TB) exportedMetrics {
	tb.Helper()
	policy := config.DefaultPolicy()
	metrics := api.NewMetrics(policy)
	store := memstore.New(memstore.Config{})
	fallback := memstore.New(memstore.Config{MaxEntries: 1000})
	tb.Cleanup(func() { store.Close(); fallback.Close() })
	metrics.AddMemoryStore("main", store)
	metrics.AddMemoryStore("fallback", fallback)
	engine, err := authguard.New(authguard.Config{
		Policy:   policy,
		Store:    store,
		Fallback: fallback,
		Secret:   []byte("tollgate-deploy-tests-secret-32-bytes-long"),
		Observe:  metrics.Observe,
	})
	if err != nil {
		tb.Fatal(err)
	}
	metrics.AddEngine(engine) // as serve does
	// A webhooks section registers the delivery's metrics on the same
	// registry (cmd/tollgate/webhooks.go).
	if _, err := webhook.New(webhook.Config{Registerer: metrics.Registry(), Endpoints: []webhook.Endpoint{{
		Name: "security", Tenant: authguard.DefaultTenant, URL: "https://hooks.example.com/tollgate",
		Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
	}}}); err != nil {
		tb.Fatal(err)
	}
	handler, err := api.New(api.Config{Engine: engine, Store: store, Metrics: metrics})
	if err != nil {
		tb.Fatal(err)
	}
	serve := func(method, path, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			tb.Fatalf("%s %s = %d: %s", method, path, rec.Code, rec.Body)
		}
		return rec
	}
	serve(http.MethodPost, "/v1/check", `{"flow":"login","account":"alice@example.com","ip":"192.0.2.1"}`)
	serve(http.MethodPost, "/v1/otp/send", `{"destination":"+44 7400 123456","channel":"sms","ip":"192.0.2.1"}`)

	e := exportedMetrics{families: map[string]bool{}, types: map[string]string{}}
	descs := make(chan *prometheus.Desc)
	go func() {
		metrics.Registry().Describe(descs)
		close(descs)
	}()
	for d := range descs {
		m := descriptorName.FindStringSubmatch(d.String())
		if m == nil {
			tb.Fatalf("cannot read the name of descriptor %s", d)
		}
		name, err := strconv.Unquote(m[1])
		if err != nil {
			tb.Fatalf("descriptor %s: %v", d, err)
		}
		e.families[name] = true
	}

	// The text format (no Accept header) names counters with their _total,
	// as queries do.
	scrape := serve(http.MethodGet, "/metrics", "").Body.Bytes()
	sc := bufio.NewScanner(bytes.NewReader(scrape))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			e.types[f[2]] = f[3]
			if !e.families[f[2]] {
				tb.Errorf("/metrics serves %s, which the registry does not describe", f[2])
			}
		}
	}
	if e.types["tollgate_verdicts_total"] != "counter" {
		tb.Fatalf("/metrics has no tollgate_verdicts_total counter:\n%s", scrape)
	}
	return e
}

// TestMetrics_DashboardAndAlertsUseOnlyExportedMetrics fails when the
// dashboard or an alert names a metric tollgate does not export, or uses a
// histogram's series wrongly: a renamed metric would otherwise leave an
// empty panel and an alert that never fires.
func TestMetrics_DashboardAndAlertsUseOnlyExportedMetrics(t *testing.T) {
	exported := tollgateMetrics(t)
	used := usedMetrics(t)
	if len(used) == 0 {
		t.Fatal("found no metric names in the dashboard and the alerts")
	}
	names := make([]string, 0, len(used))
	for n := range used {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if p := exported.problem(n); p != "" {
			t.Errorf("%s %s; used in:\n\t%s", n, p, strings.Join(used[n], "\n\t"))
		}
	}
	t.Logf("%d metric names used: %s", len(names), strings.Join(names, ", "))
}

// TestMetrics_CheckCatchesNamesTollgateDoesNotExport: the check above
// reports a name that is not exported, a histogram suffix on a counter and a
// histogram's bare name, and passes the real names.
func TestMetrics_CheckCatchesNamesTollgateDoesNotExport(t *testing.T) {
	exported := tollgateMetrics(t)
	tests := []struct {
		expr      string
		wantNames []string
		wantOK    []bool
	}{
		{`sum by (action) (rate(tollgate_verdicts_total{job=~"$job"}[$__rate_interval]))`,
			[]string{"tollgate_verdicts_total"}, []bool{true}},
		{`histogram_quantile(0.99, sum by (le) (rate(tollgate_store_duration_seconds_bucket[5m])))`,
			[]string{"tollgate_store_duration_seconds_bucket"}, []bool{true}},
		{`rate(tollgate_store_duration_seconds_count[5m]) / rate(tollgate_store_duration_seconds_sum[5m])`,
			[]string{"tollgate_store_duration_seconds_count", "tollgate_store_duration_seconds_sum"}, []bool{true, true}},
		{`rate(tollgate_verdict_total[5m])`, []string{"tollgate_verdict_total"}, []bool{false}},
		{`rate(tollgate_verdicts_total_bucket[5m])`, []string{"tollgate_verdicts_total_bucket"}, []bool{false}},
		{`rate(tollgate_store_duration_seconds[5m])`, []string{"tollgate_store_duration_seconds"}, []bool{false}},
		{`sum(tollgate_otp_budget_remaining) # tollgate_in_a_comment`, []string{"tollgate_otp_budget_remaining"}, []bool{false}},
		{`label_values(tollgate_verdicts_total{reason="tollgate_in_a_string"}, flow)`, []string{"tollgate_verdicts_total"}, []bool{true}},
		{`process_resident_memory_bytes and go_goroutines`, []string{"process_resident_memory_bytes", "go_goroutines"}, []bool{true, true}},
	}
	for _, tt := range tests {
		got := metricNames(tt.expr)
		if !slices.Equal(got, tt.wantNames) {
			t.Errorf("metricNames(%q) = %q, want %q", tt.expr, got, tt.wantNames)
			continue
		}
		for i, n := range got {
			if p := exported.problem(n); (p == "") != tt.wantOK[i] {
				t.Errorf("problem(%q) = %q, want exported = %v", n, p, tt.wantOK[i])
			}
		}
	}
}
