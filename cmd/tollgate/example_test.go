package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/testkit"
)

// uncomment returns the commented-out section of the example that starts
// with the line "# name:", without its comment marks.
func uncomment(t *testing.T, example, name string) string {
	t.Helper()
	lines := strings.Split(example, "\n")
	for i, l := range lines {
		if l != "# "+name+":" {
			continue
		}
		out := []string{name + ":"}
		for _, l := range lines[i+1:] {
			if !strings.HasPrefix(l, "#   ") {
				break
			}
			out = append(out, strings.TrimPrefix(l, "# "))
		}
		return strings.Join(out, "\n") + "\n"
	}
	t.Fatalf("the example has no commented-out %s section", name)
	return ""
}

// The example said caller authentication did not exist yet, long after it
// did. Its commented-out auth section now loads through the real loader,
// with key files where it names them, and gives what it says.
func TestExampleConfig_ItsAuthSectionLoads(t *testing.T) {
	data, err := os.ReadFile("tollgate.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	example := string(data)
	if strings.Contains(example, "Until caller authentication exists") {
		t.Error("the example still says caller authentication does not exist")
	}
	dir := t.TempDir()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	pubFile, secretFile := filepath.Join(dir, "idp.pub.pem"), filepath.Join(dir, "hs256.key")
	os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600)
	// What `openssl rand -base64 48 > FILE` writes: 64 characters and a line end.
	os.WriteFile(secretFile, []byte(strings.Repeat("k", 64)+"\n"), 0o600)

	section := uncomment(t, example, "auth")
	section = strings.ReplaceAll(section, "/etc/tollgate/idp.pub.pem", pubFile)
	section = strings.ReplaceAll(section, "/etc/tollgate/hs256.key", secretFile)
	withAuth := strings.Replace(example, "listen: 127.0.0.1:8080", "listen: 0.0.0.0:8080", 1) + "\n" + section
	path := filepath.Join(dir, "tollgate.yaml")
	os.WriteFile(path, []byte(withAuth), 0o600)
	cfg, err := config.Load(path, testkit.Env())
	if err != nil {
		t.Fatalf("the example with its auth section: %v\n%s", err, section)
	}
	if cfg.Auth == nil || len(cfg.Auth.Keys) != 2 || len(cfg.Auth.Tenants) != 1 || cfg.Auth.Audience != "tollgate" {
		t.Fatalf("auth = %+v", cfg.Auth)
	}
	for _, k := range cfg.Auth.Keys {
		if k.Alg == "HS256" && string(k.Secret) != strings.Repeat("k", 64) {
			t.Errorf("the HS256 secret is %q, want the file's text less its line end", k.Secret)
		}
	}
	if err := cfg.CheckListen(); err != nil || cfg.Listen != "0.0.0.0:8080" {
		t.Errorf("listen %q with auth: %v, want any address accepted", cfg.Listen, err)
	}
	// Without the section, the same listen address is refused, as the
	// example says.
	os.WriteFile(path, []byte(strings.Replace(example, "listen: 127.0.0.1:8080", "listen: 0.0.0.0:8080", 1)), 0o600)
	if cfg, err := config.Load(path, testkit.Env()); err != nil || cfg.CheckListen() == nil {
		t.Errorf("a non-loopback listen address without auth: %v, want it refused", err)
	}
}
