package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// secret32 keys the engines the tests run.
const secret32 = "0123456789abcdef0123456789abcdef"

func writeTemp(t *testing.T, name, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestHelp_ListsTheLabsCommands: tollgate-lab help lists the four tools
// the server binary no longer has, and nothing of the server's.
func TestHelp_ListsTheLabsCommands(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"help"}, &out, &errOut); code != 0 {
		t.Fatalf("help: exit %d, stderr %q", code, errOut.String())
	}
	for _, cmd := range []string{"simulate", "attack", "replay", "conformance"} {
		if !strings.Contains(out.String(), "\n  tollgate-lab "+cmd+" ") {
			t.Errorf("tollgate-lab help does not list %s:\n%s", cmd, out.String())
		}
	}
	for _, cmd := range []string{"serve", "healthcheck", "token"} {
		if strings.Contains(out.String(), "tollgate-lab "+cmd) {
			t.Errorf("tollgate-lab help lists the server's %s:\n%s", cmd, out.String())
		}
	}
}

// TestRun_UnknownOrNoCommandIsAUsageError: exit 2 with the usage, never a
// command run by default (a lab command reads files and runs for minutes).
func TestRun_UnknownOrNoCommandIsAUsageError(t *testing.T) {
	for _, args := range [][]string{nil, {"serve"}, {"-config", "x.yaml"}} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, &out, &errOut); code != 2 || out.Len() != 0 || !strings.Contains(errOut.String(), "usage:") {
			t.Errorf("tollgate-lab %q: exit %d, stdout %q, stderr %q; want 2 and the usage", args, code, out.String(), errOut.String())
		}
	}
}
