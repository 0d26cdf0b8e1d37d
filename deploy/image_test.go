package deploy

import (
	"archive/tar"
	"bytes"
	"cmp"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/internal/testkit"
)

// containerfile is the image's build file, relative to this package.
const containerfile = "../Containerfile"

// stage is one stage of a Containerfile: what it is FROM, its name, and its
// instructions.
type stage struct {
	from, name string
	lines      []string
}

// readStages returns the Containerfile's stages in order, and the defaults
// of the build arguments declared before the first FROM.
func readStages(tb testing.TB) ([]stage, map[string]string) {
	tb.Helper()
	b, err := os.ReadFile(containerfile)
	if err != nil {
		tb.Fatal(err)
	}
	var stages []stage
	args := map[string]string{}
	for _, line := range strings.Split(strings.ReplaceAll(string(b), "\\\n", " "), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		switch {
		case strings.EqualFold(f[0], "FROM"):
			st := stage{from: f[1]}
			if len(f) == 4 && strings.EqualFold(f[2], "AS") {
				st.name = f[3]
			}
			stages = append(stages, st)
		case len(stages) == 0 && strings.EqualFold(f[0], "ARG"):
			name, def, _ := strings.Cut(f[1], "=")
			args[name] = strings.Trim(def, `"`)
		case len(stages) > 0:
			stages[len(stages)-1].lines = append(stages[len(stages)-1].lines, line)
		}
	}
	if len(stages) == 0 {
		tb.Fatalf("%s has no stage", containerfile)
	}
	return stages, args
}

// chain returns the stages an image stage is built on, itself first, and
// the base image the last of them is FROM.
func chain(stages []stage, i int) ([]stage, string) {
	out := []stage{stages[i]}
	for from := stages[i].from; ; {
		j := slices.IndexFunc(stages[:i], func(s stage) bool { return s.name != "" && s.name == from })
		if j < 0 {
			return out, from
		}
		out = append(out, stages[j])
		i, from = j, stages[j].from
	}
}

// TestContainerfile_FinalStageIsScratchNonRootAndShellless reads the
// Containerfile itself, so that it holds on a machine with no builder: both
// images it makes (the default target, built from source, and prebuilt,
// which make image builds) are FROM scratch through their stages, copy only
// the binaries (tollgate, tollgate-lab) and /etc, run as 65532:65532, run nothing (no RUN: there is no
// shell to run it), and declare their port, stop signal, health check, entry
// point and labels.
func TestContainerfile_FinalStageIsScratchNonRootAndShellless(t *testing.T) {
	stages, _ := readStages(t)
	images := []int{len(stages) - 1}
	if i := slices.IndexFunc(stages, func(s stage) bool { return s.name == "prebuilt" }); i >= 0 {
		images = append(images, i)
	} else {
		t.Errorf("%s has no prebuilt stage, which scripts/image.sh builds", containerfile)
	}
	for _, i := range images {
		name := cmp.Or(stages[i].name, "the final stage")
		on, base := chain(stages, i)
		if base != "scratch" {
			t.Errorf("%s is FROM %q through its stages, want scratch", name, base)
		}
		var all []string
		for _, st := range on {
			all = append(all, st.lines...)
		}
		text := "\n" + strings.Join(all, "\n") + "\n"
		for _, want := range []string{
			"\nUSER 65532:65532\n",
			"\nEXPOSE 8080\n",
			"\nSTOPSIGNAL SIGTERM\n",
			`CMD ["/tollgate", "healthcheck"]`,
			"\nENTRYPOINT [\"/tollgate\"]\n",
			"\nCMD [\"serve\"]\n",
			"org.opencontainers.image.version=",
			"org.opencontainers.image.revision=",
			"org.opencontainers.image.source=",
			"org.opencontainers.image.licenses=",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("%s lacks %q", name, strings.TrimSpace(want))
			}
		}
		for _, line := range all {
			f := strings.Fields(line)
			switch strings.ToUpper(f[0]) {
			case "RUN", "ADD":
				t.Errorf("%s runs or fetches something: %q", name, line)
			case "ENV":
				if regexp.MustCompile(`(?i)SECRET|PASSWORD|TOKEN`).MatchString(line) {
					t.Errorf("%s sets a secret: %q", name, line)
				}
			case "COPY":
				if dst := f[len(f)-1]; dst != "/etc/" && dst != "/tollgate" && dst != "/tollgate-lab" {
					t.Errorf("%s copies something besides the binaries and /etc: %q", name, line)
				}
			}
		}
	}
}

// TestContainerfile_StagesAreNamedLiterally: a plain `podman build .` works
// with Debian 12's podman 4.3, which resolved `FROM ${BINARY_FROM}` (a build
// argument naming a stage) as an image's short name and failed with
// `short-name "build" did not resolve`, and which resolves no short image
// name either (no unqualified-search registries). So every FROM and COPY
// --from names scratch, an earlier stage literally, or an image by its
// registry; a build argument may name an image, never a stage.
func TestContainerfile_StagesAreNamedLiterally(t *testing.T) {
	stages, args := readStages(t)
	named := map[string]bool{}
	check := func(where, ref string) {
		if v, ok := strings.CutPrefix(ref, "${"); ok {
			arg := strings.TrimSuffix(v, "}")
			def, declared := args[arg]
			if !declared || named[def] || !strings.Contains(def, "/") {
				t.Errorf("%s: %s names %q through a build argument; name a stage literally, or an image by its registry (default %q)", containerfile, where, ref, def)
			}
			ref = def
		}
		if strings.Contains(ref, "$") {
			t.Errorf("%s: %s names %q through a build argument", containerfile, where, ref)
			return
		}
		registry, _, qualified := strings.Cut(ref, "/")
		if ref != "scratch" && !named[ref] && (!qualified || !strings.ContainsAny(registry, ".:")) {
			t.Errorf("%s: %s names %q, which is no earlier stage and no image with its registry", containerfile, where, ref)
		}
	}
	for _, st := range stages {
		check("FROM", st.from)
		for _, line := range st.lines {
			for _, f := range strings.Fields(line) {
				if v, ok := strings.CutPrefix(f, "--from="); ok {
					check("COPY --from", v)
				}
			}
		}
		if st.name != "" {
			named[st.name] = true
		}
	}
}

// imageConfig is what the test reads of `podman image inspect`.
type imageConfig struct {
	Architecture string
	Config       struct {
		User         string
		ExposedPorts map[string]struct{}
		Env          []string
		Entrypoint   []string
		Cmd          []string
		Labels       map[string]string
		StopSignal   string
	}
	Healthcheck *struct{ Test []string }
}

// TestImage_BuildsAScratchImageThatServes builds the image with make
// image's script (podman, buildah or docker, whichever is installed),
// exports its root filesystem and checks it: the binary (static: no
// interpreter), the CA certificates, passwd and group, and nothing else,
// no shell above all; the config runs it as 65532:65532 with the health
// check and labels. A container cannot be run in this sandbox, so the
// exported binary is run on the host: it serves /healthz and its own
// healthcheck passes, and without an auth section it refuses the image's
// listen address (:8080) rather than serve unauthenticated on every
// interface. Skipped, saying so, only where no builder is installed.
func TestImage_BuildsAScratchImageThatServes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an image")
	}
	name := "localhost/tollgate-test:" + strconv.FormatInt(time.Now().UnixNano(), 36)
	cmd := exec.Command("./scripts/image.sh", name)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "VERSION=v0.0.0-test")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 3 {
		t.Skipf("no image builder: %s(scripts/ensure-podman.sh installs podman)", stderr.String())
	}
	if err != nil {
		t.Fatalf("scripts/image.sh: %v\n%s", err, stderr.String())
	}
	if got := strings.TrimSpace(string(out)); !strings.HasSuffix(got, name) {
		t.Fatalf("scripts/image.sh printed %q, want %q", got, name)
	}
	builder := regexp.MustCompile(`with (\w+)\n`).FindStringSubmatch(stderr.String())
	if builder == nil {
		t.Fatalf("scripts/image.sh did not say which builder it used:\n%s", stderr.String())
	}
	tool := builder[1]
	if tool == "buildah" {
		tool = "podman" // buildah's images are in the same store; podman reads them (installed with it)
		if _, err := exec.LookPath("podman"); err != nil {
			t.Skip("built with buildah; podman is needed to export the image")
		}
	}
	t.Cleanup(func() { exec.Command(tool, "rmi", "-f", name).Run() })

	// The image's config.
	raw, err := exec.Command(tool, "image", "inspect", name).Output()
	if err != nil {
		t.Fatalf("%s image inspect: %v", tool, err)
	}
	var cfgs []imageConfig
	if err := json.Unmarshal(raw, &cfgs); err != nil || len(cfgs) != 1 {
		t.Fatalf("image inspect: %v (%d images)", err, len(cfgs))
	}
	c := cfgs[0]
	if c.Config.User != "65532:65532" {
		t.Errorf("User %q, want 65532:65532", c.Config.User)
	}
	if _, ok := c.Config.ExposedPorts["8080/tcp"]; !ok {
		t.Errorf("ExposedPorts %v, want 8080/tcp", c.Config.ExposedPorts)
	}
	if !slices.Equal(c.Config.Entrypoint, []string{"/tollgate"}) || !slices.Equal(c.Config.Cmd, []string{"serve"}) {
		t.Errorf("Entrypoint %q Cmd %q", c.Config.Entrypoint, c.Config.Cmd)
	}
	if c.Healthcheck == nil || !slices.Equal(c.Healthcheck.Test, []string{"CMD", "/tollgate", "healthcheck"}) {
		t.Errorf("Healthcheck %+v, want CMD /tollgate healthcheck", c.Healthcheck)
	}
	if c.Config.StopSignal != "SIGTERM" {
		t.Errorf("StopSignal %q", c.Config.StopSignal)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.version":  "v0.0.0-test",
		"org.opencontainers.image.source":   "https://github.com/tollgate-auth/tollgate",
		"org.opencontainers.image.licenses": "Apache-2.0",
		"org.opencontainers.image.revision": "", // any commit
	} {
		got, ok := c.Config.Labels[k]
		if !ok || (want != "" && got != want) || (want == "" && !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(got)) {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}

	// The root filesystem.
	root := t.TempDir()
	id, err := exec.Command(tool, "create", name).Output()
	if err != nil {
		t.Fatalf("%s create: %v", tool, err)
	}
	ctr := strings.TrimSpace(string(id))
	t.Cleanup(func() { exec.Command(tool, "rm", "-f", ctr).Run() })
	tarball, err := exec.Command(tool, "export", ctr).Output()
	if err != nil {
		t.Fatalf("%s export: %v", tool, err)
	}
	var files []string
	tr := tar.NewReader(bytes.NewReader(tarball))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p := strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/")
		if p == "" || p == "." {
			continue
		}
		files = append(files, p)
		dst := filepath.Join(root, p)
		switch h.Typeflag {
		case tar.TypeDir:
			os.MkdirAll(dst, 0o755)
		case tar.TypeReg:
			os.MkdirAll(filepath.Dir(dst), 0o755)
			b, _ := io.ReadAll(tr)
			if err := os.WriteFile(dst, b, os.FileMode(h.Mode)&0o777); err != nil {
				t.Fatal(err)
			}
		default:
			t.Errorf("%s: not a file or directory (type %c)", p, h.Typeflag)
		}
	}
	slices.Sort(files)
	want := []string{"etc", "etc/group", "etc/passwd", "etc/ssl", "etc/ssl/certs", "etc/ssl/certs/ca-certificates.crt", "tollgate", "tollgate-lab"}
	if !slices.Equal(files, want) {
		t.Errorf("the image holds %q, want exactly %q (no shell, nothing else)", files, want)
	}
	bin, lab := filepath.Join(root, "tollgate"), filepath.Join(root, "tollgate-lab")
	for _, b := range []string{bin, lab} {
		f, err := elf.Open(b)
		if err != nil {
			t.Errorf("/%s: %v", filepath.Base(b), err)
			continue
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("/%s has a dynamic loader: it is not static", filepath.Base(b))
			}
		}
		f.Close()
	}
	if b, _ := os.ReadFile(filepath.Join(root, "etc/passwd")); !strings.Contains(string(b), ":65532:65532:") {
		t.Errorf("/etc/passwd %q has no 65532", b)
	}

	if c.Architecture != "" && c.Architecture != goarch(t) {
		t.Skipf("an image for %s: its binary cannot run here", c.Architecture)
	}
	// The exported binary serves, and passes its own health check.
	port := freeLoopbackPort(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	srv := exec.Command(bin, "serve")
	srv.Env = []string{"TOLLGATE_LISTEN=" + addr}
	var logs bytes.Buffer
	srv.Stderr = &logs
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	var hcOut []byte
	if !testkit.Eventually(20*time.Second, func() bool {
		hcOut, err = exec.Command(bin, "healthcheck", "http://"+addr+"/healthz").CombinedOutput()
		return err == nil
	}) {
		t.Fatalf("the image's healthcheck never passed: %v %s\n%s", err, hcOut, logs.String())
	}
	if out, _ := exec.Command(bin, "version").Output(); !strings.HasPrefix(string(out), "tollgate v0.0.0-test\n") {
		t.Errorf("the image's binary says %q", out)
	}
	if out, err := exec.Command(lab, "help").Output(); err != nil || !strings.Contains(string(out), "tollgate-lab conformance") {
		t.Errorf("the image's tollgate-lab help: %q (%v)", out, err)
	}

	// With the image's own listen address and no auth: a refusal, not an
	// unauthenticated service on every interface.
	refused := exec.Command(bin, "serve")
	refused.Env = []string{"TOLLGATE_LISTEN=:8080"}
	out2, err := refused.CombinedOutput()
	if err == nil || !strings.Contains(string(out2), "refusing to listen") {
		t.Errorf("serve on :8080 without auth: %v\n%s", err, out2)
	}
}

// goarch is the Go toolchain's GOARCH here.
func goarch(t *testing.T) string {
	out, err := exec.Command("go", "env", "GOARCH").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}
