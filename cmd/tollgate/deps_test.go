package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The server binary carries no test-only dependency (the browser driver,
// the OpenAPI validator, the in-process Redis), no load tool and none of
// the lab (the simulator, the attack search, back-testing, the conformance
// report): those live in tests, in nested modules, in cmd/tollgate-bench
// and in cmd/tollgate-lab.
func TestServerDependsOnNoTestOnlyModuleTheLoadToolOrTheLab(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps printed no dependency list:\n%s", out)
	}
	for _, dep := range deps {
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
