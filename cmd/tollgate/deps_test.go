package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// dep is one package linked into the server binary, as go list -deps
// prints it: Dir and GoFiles only for the service's own module.
type dep struct {
	ImportPath string
	Dir        string
	GoFiles    []string
}

// listed is one package go list -deps printed: whether it is in the
// standard library, and every package it depends on.
type listed struct {
	dep
	Standard bool
	Deps     []string
}

const module = "github.com/tollgate-auth/tollgate"

// layered are the packages whose dependencies the tests below hold, the
// server's and those of the libraries whose layering they guard: one go
// list -deps for all of them, since each run loads the whole module graph
// (a quarter of a CPU-second for the server, a few hundredths for a leaf),
// rather than one run in each package's own test binary.
var layered = []string{
	module + "/cmd/tollgate",
	module + "/authguard",
	module + "/authguard/phonenum",
	module + "/api/client",
	module + "/api/wire",
	module + "/internal/policyfile",
}

// packages runs go list -deps once for the packages of layered: each
// package it printed, in its order.
var packages = sync.OnceValues(func() ([]listed, error) {
	out, err := exec.Command("go", append([]string{"list", "-deps", "-f",
		`{{.ImportPath}}	{{.Standard}}	{{join .Deps " "}}	{{if and .Module (eq .Module.Path "` + module + `")}}{{.Dir}}{{range .GoFiles}} {{.}}{{end}}{{end}}`},
		layered...)...).Output()
	if err != nil {
		return nil, err
	}
	var pkgs []listed
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			return nil, fmt.Errorf("go list printed %q", line)
		}
		p := listed{dep: dep{ImportPath: f[0]}, Standard: f[1] == "true", Deps: strings.Fields(f[2])}
		if files := strings.Fields(f[3]); len(files) > 0 {
			p.Dir, p.GoFiles = files[0], files[1:]
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
})

// depsOf is root and every package it depends on, as go list -deps root
// prints them.
func depsOf(t *testing.T, root string) []listed {
	t.Helper()
	pkgs, err := packages()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	in := map[string]bool{root: true}
	for _, p := range pkgs {
		if p.ImportPath == root {
			for _, d := range p.Deps {
				in[d] = true
			}
		}
	}
	var deps []listed
	for _, p := range pkgs {
		if in[p.ImportPath] {
			deps = append(deps, p)
		}
	}
	if len(deps) < 2 {
		t.Fatalf("go list -deps printed no dependency list for %s", root)
	}
	return deps
}

// serverDeps are the packages linked into the server binary, for the tests
// that read them (the banned dependencies, the environment variables read).
func serverDeps(t *testing.T) []dep {
	t.Helper()
	var deps []dep
	for _, p := range depsOf(t, module+"/cmd/tollgate") {
		deps = append(deps, p.dep)
	}
	return deps
}

// The server binary carries no test-only dependency (the browser driver,
// the OpenAPI validator, the in-process Redis), no load tool and none of
// the lab (the simulator, the attack search, back-testing, the conformance
// report): those live in tests, in nested modules, in cmd/tollgate-bench
// and in cmd/tollgate-lab.
func TestServerDependsOnNoTestOnlyModuleTheLoadToolOrTheLab(t *testing.T) {
	listed := serverDeps(t)
	if len(listed) < 10 {
		t.Fatalf("go list -deps printed no dependency list: %v", listed)
	}
	for _, d := range listed {
		dep := d.ImportPath
		for _, banned := range []string{
			"testing",
			"github.com/chromedp",
			"github.com/getkin/kin-openapi",
			"github.com/alicebob/miniredis",
			"github.com/tollgate-auth/tollgate/cmd/tollgate-bench",
			"github.com/tollgate-auth/tollgate/cmd/tollgate-lab",
			"github.com/tollgate-auth/tollgate/internal/lab",
			"github.com/tollgate-auth/tollgate/internal/testkit", // and the kit under it: redistest, storetest, testclock
		} {
			if dep == banned || strings.HasPrefix(dep, banned+"/") {
				t.Errorf("cmd/tollgate depends on %s", dep)
			}
		}
	}
}

// The service's module requires no test-only module: the browser driver
// and the OpenAPI validator are required by the nested modules that use
// them (e2e/browser, api/contract), so that a build, an SBOM or a
// vulnerability scan of the service sees only what it runs.
func TestServiceModuleRequiresNoBrowserDriverOrOpenAPIValidator(t *testing.T) {
	mod, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, banned := range []string{"github.com/chromedp/", "github.com/getkin/kin-openapi"} {
		if strings.Contains(string(mod), banned) {
			t.Errorf("go.mod requires %s", banned)
		}
	}
}

// The engine stays free of the HTTP layer, the Redis client, the policy
// file's format and OpenTelemetry: it takes Go values, a Store and, for
// traces, plain funcs (Config.Trace).
func TestEngineDependsOnNoHTTPRedisYAMLOrTracing(t *testing.T) {
	for _, d := range depsOf(t, module+"/authguard") {
		dep := d.ImportPath
		for _, banned := range []string{"net/http", "github.com/redis/go-redis", "yaml", "go.opentelemetry.io"} {
			if dep == banned || strings.HasPrefix(dep, banned+"/") || (banned == "yaml" && strings.Contains(dep, "yaml")) {
				t.Errorf("authguard depends on %s", dep)
			}
		}
	}
}

// The policy format reads YAML into the engine's Go values and links
// nothing else: the standard library, and of the rest nothing but the
// engine's own dependencies and the YAML library.
// The tests of authguard and its stores load policies with it and not with
// internal/config, which also links Redis, the proxy, breached-password
// corpora, challenges, the HTTP client and metrics: a link of authguard's
// test binary a third cheaper.
func TestPolicyFile_ImportsTheEngineAndYAMLOnly(t *testing.T) {
	engine := map[string]bool{module + "/authguard": true}
	for _, d := range depsOf(t, module+"/authguard") {
		engine[d.ImportPath] = true
	}
	var yaml bool
	for _, d := range depsOf(t, module+"/internal/policyfile") {
		yaml = yaml || d.ImportPath == "go.yaml.in/yaml/v3"
		if dep := d.ImportPath; !d.Standard && !engine[dep] && dep != "go.yaml.in/yaml/v3" && dep != module+"/internal/policyfile" {
			t.Errorf("internal/policyfile depends on %s", dep)
		}
	}
	if !yaml {
		t.Errorf("go list -deps printed no YAML library for internal/policyfile")
	}
}

// phonenum is a leaf: it imports libphonenumber and no package of tollgate,
// so the engine's dependency on the metadata is the one edge to it.
func TestPhonenum_IsALeaf(t *testing.T) {
	for _, d := range depsOf(t, module+"/authguard/phonenum") {
		if dep := d.ImportPath; strings.HasPrefix(dep, module) && dep != module+"/authguard/phonenum" {
			t.Errorf("phonenum depends on %s", dep)
		}
	}
}

// The client goes into auth systems' binaries: it imports the standard
// library, api/wire, breached/hibp (the k-anonymity hash and range parser,
// itself standard library only) and golang.org/x/text (the Unicode data of
// tollgate's account fold) only, never the engine, Redis, YAML or a router.
func TestClient_ImportsStandardLibraryWireAndTextOnly(t *testing.T) {
	allowed := map[string]bool{
		module + "/api/client":           true,
		module + "/api/wire":             true,
		module + "/internal/accountfold": true,
		module + "/breached/hibp":        true,
	}
	var wire bool
	for _, d := range depsOf(t, module+"/api/client") {
		wire = wire || d.ImportPath == module+"/api/wire" && !d.Standard
		if !d.Standard && !allowed[d.ImportPath] && !strings.HasPrefix(d.ImportPath, "golang.org/x/text/") {
			t.Errorf("api/client imports %s", d.ImportPath)
		}
	}
	if !wire {
		t.Errorf("go list -deps printed no api/wire for api/client")
	}
}

// The wire package is a leaf: it imports the standard library only.
func TestWire_ImportsStandardLibraryOnly(t *testing.T) {
	for _, d := range depsOf(t, module+"/api/wire") {
		if !d.Standard && d.ImportPath != module+"/api/wire" {
			t.Errorf("api/wire imports %s", d.ImportPath)
		}
	}
}
