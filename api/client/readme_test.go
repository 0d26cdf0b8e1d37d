package client_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadme_LoginHandlerCompiles holds README's "Integrate in Go" login
// handler to the package: the snippet is wrapped in a main package and
// vetted, so a renamed call or field fails here, not in a reader's editor.
func TestReadme_LoginHandlerCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go vet")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "## Integrate in Go")
	if !ok {
		t.Fatal(`README has no "## Integrate in Go" section`)
	}
	_, rest, ok = strings.Cut(rest, "```go\n")
	snippet, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("the section has no Go block")
	}
	dir, err := os.MkdirTemp(root, ".readme-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	src := `package main

import (
	"net/http"
	"net/netip"
	"os"

	"github.com/tollgate-auth/tollgate/api/client"
	"github.com/tollgate-auth/tollgate/api/wire"
)

func checkPassword(user, password string) bool { return false }

func main() {
` + snippet + "}\n"
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "vet", "./"+filepath.Base(dir))
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("README's login handler does not compile: %v\n%s\n%s", err, out, src)
	}
}
