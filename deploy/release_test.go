package deploy

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRelease_IsReproducible builds the linux/amd64 release archive twice,
// from two clones of this commit in different directories and with two
// build caches (the second empty, so every package is compiled again), and
// wants the same SHA256SUMS: no build path, build ID, time or cache state
// reaches the archive or the SBOM. It also checks what the archive holds
// and that the binary says its version.
func TestRelease_IsReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a release twice, once with an empty build cache")
	}
	for _, tool := range []string{"git", "go", "tar", "gzip", "sha256sum"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(repo, "scripts", "release.sh"))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	// One SBOM tool for both runs, so that the empty cache is the build's.
	sbom := filepath.Join(tmp, "bin")
	install := exec.Command("go", "install", "github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0")
	install.Env = append(os.Environ(), "GOBIN="+sbom, "GOFLAGS=")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("installing cyclonedx-gomod: %v\n%s", err, out)
	}
	release := func(name string, env ...string) string {
		dir := filepath.Join(tmp, name)
		if out, err := exec.Command("git", "clone", "--quiet", "--no-hardlinks", repo, dir).CombinedOutput(); err != nil {
			t.Fatalf("git clone: %v\n%s", err, out)
		}
		// The working tree's script, so that it is the one under test.
		if err := os.WriteFile(filepath.Join(dir, "scripts", "release.sh"), script, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("./scripts/release.sh", "v0.0.0-repro", filepath.Join(dir, "out"))
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), append(env, "TARGETS=linux/amd64", "CYCLONEDX_BIN="+filepath.Join(sbom, "cyclonedx-gomod"))...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("release.sh in %s: %v\n%s", name, err, out)
		}
		sums, err := os.ReadFile(filepath.Join(dir, "out", "SHA256SUMS"))
		if err != nil {
			t.Fatal(err)
		}
		return string(sums)
	}
	first := release("a")
	second := release("second-clone", "GOCACHE="+filepath.Join(tmp, "empty-cache"))
	if first != second {
		t.Errorf("two builds of one commit differ:\n%s\n%s", first, second)
	}
	if n := strings.Count(first, "\n"); n != 2 {
		t.Errorf("SHA256SUMS has %d lines, want the archive and its SBOM:\n%s", n, first)
	}

	out := filepath.Join(tmp, "a", "out")
	f, err := os.Open(filepath.Join(out, "tollgate_v0.0.0-repro_linux_amd64.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var bin []byte
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" {
			t.Errorf("%s: owner %d:%d %q, want 0:0 numeric", h.Name, h.Uid, h.Gid, h.Uname)
		}
		if strings.HasSuffix(h.Name, "/tollgate") {
			bin, _ = io.ReadAll(tr)
		}
	}
	slices.Sort(names)
	d := "tollgate_v0.0.0-repro_linux_amd64/"
	if want := []string{d, d + "CHANGELOG.md", d + "README.md", d + "tollgate", d + "tollgate.example.yaml"}; !slices.Equal(names, want) {
		t.Errorf("the archive holds %q, want %q", names, want)
	}
	for _, leak := range []string{repo, tmp, os.Getenv("HOME") + "/go/pkg/mod"} {
		if bytes.Contains(bin, []byte(leak)) {
			t.Errorf("the binary holds the build path %q", leak)
		}
	}
	p := filepath.Join(tmp, "tollgate")
	if err := os.WriteFile(p, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if v, err := exec.Command(p, "version").Output(); err != nil || !strings.HasPrefix(string(v), "tollgate v0.0.0-repro\ncommit:   ") {
		t.Errorf("the released binary says %q (%v)", v, err)
	}
	var bom struct {
		BOMFormat  string `json:"bomFormat"`
		Components []struct {
			Name string `json:"name"`
		} `json:"components"`
	}
	b, err := os.ReadFile(filepath.Join(out, "tollgate_v0.0.0-repro_linux_amd64.cdx.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &bom); err != nil || bom.BOMFormat != "CycloneDX" {
		t.Fatalf("SBOM: %v, format %q", err, bom.BOMFormat)
	}
	found := false
	for _, c := range bom.Components {
		found = found || c.Name == "github.com/redis/go-redis/v9"
	}
	if !found {
		t.Errorf("the SBOM lists %d components, not github.com/redis/go-redis/v9", len(bom.Components))
	}
}
