package wire_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The wire package is a leaf: it imports the standard library only.
func TestWire_ImportsStandardLibraryOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for line := range strings.Lines(string(out)) {
		path, std, _ := strings.Cut(strings.TrimSpace(line), " ")
		if std != "true" && path != "github.com/tollgate-auth/tollgate/api/wire" {
			t.Errorf("api/wire imports %s", path)
		}
	}
}
