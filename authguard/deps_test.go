package authguard_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The engine stays free of the HTTP layer, the Redis client and the policy
// file's format: it takes Go values and a Store.
func TestEngineDependsOnNoHTTPRedisOrYAML(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"net/http", "github.com/redis/go-redis", "yaml"} {
			if dep == banned || strings.HasPrefix(dep, banned+"/") || (banned == "yaml" && strings.Contains(dep, "yaml")) {
				t.Errorf("authguard depends on %s", dep)
			}
		}
	}
}
