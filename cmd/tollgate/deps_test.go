package main

import (
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

// serverDeps runs go list -deps once for the tests that read the binary's
// packages (the banned dependencies, the environment variables read): each
// run loads the whole module graph, a quarter of a CPU-second.
var serverDeps = sync.OnceValues(func() ([]dep, error) {
	out, err := exec.Command("go", "list", "-deps", "-f",
		`{{.ImportPath}}{{if and .Module (eq .Module.Path "github.com/tollgate-auth/tollgate")}} {{.Dir}}{{range .GoFiles}} {{.}}{{end}}{{end}}`, ".").Output()
	if err != nil {
		return nil, err
	}
	var deps []dep
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		d := dep{ImportPath: f[0]}
		if len(f) > 1 {
			d.Dir, d.GoFiles = f[1], f[2:]
		}
		deps = append(deps, d)
	}
	return deps, nil
})

// The server binary carries no test-only dependency (the browser driver,
// the OpenAPI validator, the in-process Redis), no load tool and none of
// the lab (the simulator, the attack search, back-testing, the conformance
// report): those live in tests, in nested modules, in cmd/tollgate-bench
// and in cmd/tollgate-lab.
func TestServerDependsOnNoTestOnlyModuleTheLoadToolOrTheLab(t *testing.T) {
	listed, err := serverDeps()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
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
