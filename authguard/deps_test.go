package authguard_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The engine stays free of the HTTP layer, the Redis client, the policy
// file's format and OpenTelemetry: it takes Go values, a Store and, for
// traces, plain funcs (Config.Trace).
func TestEngineDependsOnNoHTTPRedisYAMLOrTracing(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"net/http", "github.com/redis/go-redis", "yaml", "go.opentelemetry.io"} {
			if dep == banned || strings.HasPrefix(dep, banned+"/") || (banned == "yaml" && strings.Contains(dep, "yaml")) {
				t.Errorf("authguard depends on %s", dep)
			}
		}
	}
}
