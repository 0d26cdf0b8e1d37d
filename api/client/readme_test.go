package client_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReadme_LoginHandlerCompiles holds the "Integrate in Go" login handler
// of docs/clients.md (the clients' page the README points to) to the
// package: the snippet is wrapped in a main package and vetted, so a renamed
// call or field fails here, not in a reader's editor.
func TestReadme_LoginHandlerCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go vet")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "docs", "clients.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "## Integrate in Go")
	if !ok {
		t.Fatal(`docs/clients.md has no "## Integrate in Go" section`)
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
		t.Errorf("docs/clients.md's login handler does not compile: %v\n%s\n%s", err, out, src)
	}
}

// TestReadme_SideBySideSnippetsAreTheTestedOnes holds docs/clients.md's
// check in Go, TypeScript and Python ("Integrate in TypeScript, Python or
// any language") to the handlers the three clients' tests run: each block's
// lines, in order, are lines of its Go login handler (compiled by
// TestReadme_LoginHandlerCompiles), of clients/typescript/examples/readme.ts
// and of clients/python/examples/login.py (run against a real tollgate by
// those clients' suites).
func TestReadme_SideBySideSnippetsAreTheTestedOnes(t *testing.T) {
	readme, err := os.ReadFile("../../docs/clients.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "## Integrate in TypeScript, Python or any language")
	if !ok {
		t.Fatal(`docs/clients.md has no "## Integrate in TypeScript, Python or any language" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	_, goHandler, _ := strings.Cut(string(readme), "## Integrate in Go")
	_, goHandler, _ = strings.Cut(goHandler, "```go\n")
	goHandler, _, _ = strings.Cut(goHandler, "```")
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tt := range []struct{ fence, source, where string }{
		{"```go\n", goHandler, "docs/clients.md's Go login handler"},
		{"```ts\n", read("../../clients/typescript/examples/readme.ts"), "clients/typescript/examples/readme.ts"},
		{"```python\n", read("../../clients/python/examples/login.py"), "clients/python/examples/login.py"},
	} {
		_, block, ok := strings.Cut(section, tt.fence)
		if !ok {
			t.Errorf("the section has no %q block", strings.TrimSpace(tt.fence))
			continue
		}
		block, _, _ = strings.Cut(block, "```")
		var have []string
		for _, l := range strings.Split(tt.source, "\n") {
			have = append(have, strings.TrimSpace(l))
		}
		at := 0
		for _, l := range strings.Split(strings.TrimSpace(block), "\n") {
			l = strings.TrimSpace(l)
			i := slices.Index(have[at:], l)
			if i < 0 {
				t.Errorf("docs/clients.md's %s line %q is not in %s (after line %d)", strings.TrimSpace(tt.fence), l, tt.where, at)
				break
			}
			at += i + 1
		}
	}
}
