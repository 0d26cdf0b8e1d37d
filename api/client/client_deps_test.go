package client_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The client goes into auth systems' binaries: it imports the standard
// library, api/wire, breached/hibp (the k-anonymity hash and range parser,
// itself standard library only) and golang.org/x/text (the Unicode data of
// tollgate's account fold) only, never the engine, Redis, YAML or a router.
func TestClient_ImportsStandardLibraryWireAndTextOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	allowed := map[string]bool{
		"github.com/tollgate-auth/tollgate/api/client":           true,
		"github.com/tollgate-auth/tollgate/api/wire":             true,
		"github.com/tollgate-auth/tollgate/internal/accountfold": true,
		"github.com/tollgate-auth/tollgate/breached/hibp":        true,
	}
	var n int
	for line := range strings.Lines(string(out)) {
		path, std, _ := strings.Cut(strings.TrimSpace(line), " ")
		n++
		if std != "true" && !allowed[path] && !strings.HasPrefix(path, "golang.org/x/text/") {
			t.Errorf("api/client imports %s", path)
		}
	}
	if n < 3 || !strings.Contains(string(out), "github.com/tollgate-auth/tollgate/api/wire false") {
		t.Errorf("go list -deps printed no dependency list:\n%s", out)
	}
}
