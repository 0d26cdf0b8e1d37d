package redisstore

import (
	"crypto/sha1"
	"encoding/hex"
	"os/exec"
	"strings"
	"testing"
)

// scripts/bench-scripts.sh and bench-lua.sh measure the check script as
// scripts/check-script.sh assembles it; it must be the script the store
// sends, or the figures in BENCHMARKS.md are about something else.
func TestCheckScript_BenchScriptsAssembleTheSameScript(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	cmd := exec.Command("bash", "-c", `. scripts/check-script.sh && assemble ""`)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("assemble: %v", err)
	}
	sum := sha1.Sum(out)
	if got, want := hex.EncodeToString(sum[:]), checkScript.Hash(); got != want {
		t.Errorf("scripts/check-script.sh assembles a script with SHA1 %s, the store sends %s", got, want)
	}
	if !strings.Contains(string(out), "local function op_b(key, A, o, nargs)") {
		t.Errorf("assembled script has no op_b function:\n%.300s", out)
	}
}
