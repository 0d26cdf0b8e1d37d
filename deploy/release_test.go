package deploy

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestRelease_IsReproducible builds the linux/amd64 release archive twice,
// from two clones of this commit in different directories and with two
// build caches (the second empty, so every package is compiled again), and
// wants the same SHA256SUMS: no build path, build ID, time or cache state
// reaches the archive or the SBOM. It also checks what the archive holds
// and that the binaries run: the server says its version, tollgate-lab
// lists its commands.
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
	// One commit for both builds: others may commit while the first builds.
	head, err := exec.Command("git", "-C", repo, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	commit := strings.TrimSpace(string(head))
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
		if out, err := exec.Command("git", "-C", dir, "checkout", "--quiet", "--detach", commit).CombinedOutput(); err != nil {
			t.Fatalf("git checkout %s: %v\n%s", commit, err, out)
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
	if n := strings.Count(first, "\n"); n != 5 {
		t.Errorf("SHA256SUMS has %d lines, want the archive, its SBOM, the Python sdist and wheel, and the npm tarball:\n%s", n, first)
	}
	for _, name := range []string{`tollgate-[0-9.]+\.tar\.gz`, `tollgate-[0-9.]+-py3-none-any\.whl`, `tollgate-client-[0-9.]+\.tgz`} {
		if !regexp.MustCompile(`(?m)^[0-9a-f]{64}  ` + name + `$`).MatchString(first) {
			t.Errorf("SHA256SUMS lacks the client package %s:\n%s", name, first)
		}
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
	var bin, lab []byte
	d := "tollgate_v0.0.0-repro_linux_amd64/"
	files := map[string]bool{} // the archive's regular files, relative to d
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" {
			t.Errorf("%s: owner %d:%d %q, want 0:0 numeric", h.Name, h.Uid, h.Gid, h.Uname)
		}
		name, ok := strings.CutPrefix(h.Name, d)
		if !ok {
			t.Errorf("%s: outside the archive's directory %s", h.Name, d)
			continue
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		files[name] = true
		b, _ := io.ReadAll(tr)
		switch name {
		case "tollgate":
			bin = b
			continue
		case "tollgate-lab":
			lab = b
			continue
		case "tollgate.example.yaml":
			name = "cmd/tollgate/tollgate.example.yaml"
		}
		// Every other file is the commit's, at the same path.
		if want, err := os.ReadFile(filepath.Join(tmp, "a", filepath.FromSlash(name))); err != nil || !bytes.Equal(b, want) {
			t.Errorf("the archive's %s is not the commit's %s (%v)", h.Name, name, err)
		}
	}
	for _, want := range []string{"tollgate", "tollgate-lab", "tollgate.example.yaml", "LICENSE", "README.md", "CHANGELOG.md",
		"deploy/systemd/tollgate.service", "deploy/systemd/tollgate.env.example",
		"deploy/prometheus/alerts.yaml", "deploy/grafana/tollgate.json"} {
		if !files[want] {
			t.Errorf("the archive lacks %s", want)
		}
	}
	// What the docs tell an operator to install from the unpacked archive is
	// in it: a unit file named in deploy/systemd/README.md but left out of
	// the archive is an install that fails on the first command.
	for _, src := range installedFromTheArchive(t, filepath.Join(tmp, "a")) {
		if !files[src.path] {
			t.Errorf("%s: installs %s, which the release archive does not hold", src.where, src.path)
		}
	}
	for _, leak := range []string{repo, tmp, os.Getenv("HOME") + "/go/pkg/mod"} {
		if bytes.Contains(bin, []byte(leak)) || bytes.Contains(lab, []byte(leak)) {
			t.Errorf("a binary holds the build path %q", leak)
		}
	}
	labPath := filepath.Join(tmp, "tollgate-lab")
	if err := os.WriteFile(labPath, lab, 0o755); err != nil {
		t.Fatal(err)
	}
	if help, err := exec.Command(labPath, "help").Output(); err != nil || !strings.Contains(string(help), "tollgate-lab simulate") {
		t.Errorf("the released tollgate-lab's help: %q (%v)", help, err)
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
	// The SBOM is the server's: it covers tollgate-lab only while the lab
	// uses no module the server does not.
	listed := map[string]bool{}
	for _, c := range bom.Components {
		listed[c.Name] = true
	}
	mods := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}}{{end}}{{end}}", "./cmd/tollgate-lab")
	mods.Dir = filepath.Join(tmp, "a")
	labMods, err := mods.Output()
	if err != nil {
		t.Fatalf("go list the lab's modules: %v", err)
	}
	for _, m := range strings.Fields(string(labMods)) {
		if !listed[m] {
			t.Errorf("tollgate-lab uses %s, which the archive's SBOM (the server's) does not list", m)
		}
	}
}

// installed is a file a doc's install command takes from the archive.
type installed struct {
	path  string // relative to the archive's directory
	where string // file:line of the command
}

// installedFromTheArchive returns the sources of every `install` command in
// the sh blocks of the docs that say how to deploy a release (README.md,
// docs/*.md, deploy/**/README.md): the files an operator installs from the
// unpacked archive. A source that is an absolute path, or a variable, is the
// operator's own file and left out.
func installedFromTheArchive(t *testing.T, repo string) []installed {
	t.Helper()
	docs := []string{filepath.Join(repo, "README.md")}
	for _, pattern := range []string{"docs/*.md", "deploy/*/README.md"} {
		m, err := filepath.Glob(filepath.Join(repo, pattern))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, m...)
	}
	var out []installed
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repo, doc)
		for _, c := range installCommands(string(b)) {
			for _, src := range c.sources {
				if strings.HasPrefix(src, "/") || strings.Contains(src, "$") {
					continue
				}
				out = append(out, installed{path: src, where: fmt.Sprintf("%s:%d", rel, c.line)})
			}
		}
	}
	if len(out) < 3 {
		t.Fatalf("found %d files the deploy docs install (%v); the install pattern no longer matches", len(out), out)
	}
	return out
}

// installCommand is one install(1) command of a Markdown sh block.
type installCommand struct {
	line    int
	sources []string
}

// installCommands returns the install(1) commands in a Markdown text's
// ```sh blocks that copy files (not `install -d`; with or without sudo),
// with their sources: every operand but the last. Options that take a value (-m, -o, -g, -t, -S) skip
// it; with -t every operand is a source.
func installCommands(md string) []installCommand {
	var out []installCommand
	inSh := false
	for i, line := range strings.Split(md, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") {
			inSh = !inSh && (t == "```sh" || t == "```bash" || t == "```shell")
			continue
		}
		if !inSh {
			continue
		}
		t, _, _ = strings.Cut(t, "#")
		for _, cmd := range strings.FieldsFunc(t, func(r rune) bool { return r == ';' || r == '&' || r == '|' }) {
			words := strings.Fields(cmd)
			if len(words) > 0 && words[0] == "sudo" {
				words = words[1:]
			}
			if len(words) == 0 || words[0] != "install" {
				continue
			}
			var operands []string
			dirs, target := false, false
			for j := 1; j < len(words); j++ {
				switch w := words[j]; {
				case w == "-d" || w == "--directory":
					dirs = true
				case w == "-t":
					target = true
					j++
				case w == "-m" || w == "-o" || w == "-g" || w == "-S":
					j++
				case strings.HasPrefix(w, "-"):
				default:
					operands = append(operands, w)
				}
			}
			if dirs || len(operands) == 0 {
				continue
			}
			if !target {
				operands = operands[:len(operands)-1]
			}
			out = append(out, installCommand{line: i + 1, sources: operands})
		}
	}
	return out
}

func TestInstallCommands(t *testing.T) {
	md := "text install x y\n```sh\n" +
		"install -m 0755 tollgate /usr/local/bin/tollgate\n" +
		"install -d -m 0755 /etc/tollgate\n" +
		"install -D -m 0644 deploy/a.conf /etc/a.conf   # a comment\n" +
		"systemctl daemon-reload && install -m 0644 -t /etc/x b c\n" +
		"cd dir && sudo install -m 0755 bin /usr/local/bin/bin\n" +
		"```\ninstall z w\n"
	var got []string
	for _, c := range installCommands(md) {
		got = append(got, fmt.Sprintf("%d:%s", c.line, strings.Join(c.sources, ",")))
	}
	if want := []string{"3:tollgate", "5:deploy/a.conf", "6:b,c", "7:bin"}; !slices.Equal(got, want) {
		t.Errorf("installCommands = %q, want %q", got, want)
	}
}

// apacheLicenseSHA256 is the SHA-256 of the Apache License 2.0 as the ASF
// publishes it (https://www.apache.org/licenses/LICENSE-2.0.txt).
const apacheLicenseSHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"

// TestLicence_IsApache2AndEveryPackageDeclaresIt: LICENSE is the Apache
// License 2.0 word for word, the npm and Python packages carry a copy of it
// (each is packed from its own directory, which the root's is not in) and
// declare the SPDX id, and the image's label says it. A package that ships
// without its licence cannot be used by anyone who checks.
func TestLicence_IsApache2AndEveryPackageDeclaresIt(t *testing.T) {
	root, err := os.ReadFile("../LICENSE")
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(root); hex.EncodeToString(sum[:]) != apacheLicenseSHA256 {
		t.Errorf("LICENSE is not the Apache License 2.0 as published (sha256 %x)", sum)
	}
	for _, copyOf := range []string{"../clients/typescript/LICENSE", "../clients/python/LICENSE"} {
		if b, err := os.ReadFile(copyOf); err != nil || !bytes.Equal(b, root) {
			t.Errorf("%s is not LICENSE (%v)", copyOf, err)
		}
	}
	var pkg struct {
		License string   `json:"license"`
		Files   []string `json:"files"`
	}
	b, err := os.ReadFile("../clients/typescript/package.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	if pkg.License != "Apache-2.0" || !slices.Contains(pkg.Files, "LICENSE") {
		t.Errorf("clients/typescript/package.json: license %q, files %q; want Apache-2.0 and LICENSE among the files", pkg.License, pkg.Files)
	}
	// Debian 12's setuptools (66), which builds the package offline, takes
	// the licence as a table; the SPDX id is its text.
	b, err = os.ReadFile("../clients/python/pyproject.toml")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nlicense = {text = \"Apache-2.0\"}\n", "\nlicense-files = [\"LICENSE\"]\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("clients/python/pyproject.toml lacks %q", strings.TrimSpace(want))
		}
	}
	b, err = os.ReadFile(containerfile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `org.opencontainers.image.licenses="Apache-2.0"`) {
		t.Errorf("the Containerfile's licences label is not Apache-2.0")
	}
}

// TestLicence_ThePackagesAsBuiltHoldIt packs the npm package (npm pack
// --dry-run, no scripts) and builds the Python wheel offline (pip, no build
// isolation, no index: the system's setuptools) from a copy of its
// directory, and looks for LICENSE in each and the SPDX id in the wheel's
// metadata. Skipped, saying so, where npm or python3 with pip is missing.
func TestLicence_ThePackagesAsBuiltHoldIt(t *testing.T) {
	if testing.Short() {
		t.Skip("packs the npm package and builds the Python wheel")
	}
	t.Run("npm", func(t *testing.T) {
		if _, err := exec.LookPath("npm"); err != nil {
			t.Skip("npm is not installed")
		}
		cmd := exec.Command("npm", "pack", "--dry-run", "--json", "--ignore-scripts")
		cmd.Dir = "../clients/typescript"
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("npm pack: %v", err)
		}
		var packs []struct {
			License string `json:"license"`
			Files   []struct {
				Path string `json:"path"`
			} `json:"files"`
		}
		if err := json.Unmarshal(out, &packs); err != nil || len(packs) != 1 {
			t.Fatalf("npm pack --json: %v (%d packages)\n%s", err, len(packs), out)
		}
		found := false
		for _, f := range packs[0].Files {
			found = found || f.Path == "LICENSE"
		}
		if !found {
			t.Errorf("the npm package holds no LICENSE: %+v", packs[0].Files)
		}
	})
	t.Run("python", func(t *testing.T) {
		py := "/usr/bin/python3"
		if _, err := os.Stat(py); err != nil {
			if py, err = exec.LookPath("python3"); err != nil {
				t.Skip("python3 is not installed")
			}
		}
		if err := exec.Command(py, "-m", "pip", "--version").Run(); err != nil {
			t.Skipf("%s has no pip", py)
		}
		src := filepath.Join(t.TempDir(), "python")
		if out, err := exec.Command("cp", "-r", "../clients/python", src).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v\n%s", err, out)
		}
		wheels := filepath.Join(t.TempDir(), "wheels")
		build := exec.Command(py, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w", wheels, ".")
		build.Dir = src
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("pip wheel: %v\n%s", err, out)
		}
		whl, _ := filepath.Glob(filepath.Join(wheels, "*.whl"))
		if len(whl) != 1 {
			t.Fatalf("pip wheel made %q", whl)
		}
		zr, err := zip.OpenReader(whl[0])
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		root, _ := os.ReadFile("../LICENSE")
		var licence, metadata []byte
		for _, f := range zr.File {
			dir, name := path.Split(f.Name)
			if !strings.HasSuffix(dir, ".dist-info/") || (name != "LICENSE" && name != "METADATA") {
				continue
			}
			r, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(r)
			r.Close()
			if name == "LICENSE" {
				licence = b
			} else {
				metadata = b
			}
		}
		if !bytes.Equal(licence, root) {
			t.Errorf("the wheel's dist-info holds no LICENSE equal to the repository's (%d bytes)", len(licence))
		}
		if !regexp.MustCompile(`(?m)^License(-Expression)?: Apache-2\.0$`).Match(metadata) {
			t.Errorf("the wheel's METADATA does not say Apache-2.0:\n%s", metadata)
		}
	})
}
