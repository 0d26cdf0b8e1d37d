package main

import (
	"bytes"
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestHelp_ListsTheServersCommandsOnly: tollgate help lists the service and
// its operators' commands; the lab's (simulate, attack, replay,
// conformance) are tollgate-lab's, and naming one says so.
func TestHelp_ListsTheServersCommandsOnly(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"help"}, &out, &errOut, func(string) string { return "" }); code != 0 {
		t.Fatalf("help: exit %d, stderr %q", code, errOut.String())
	}
	var listed []string
	for _, m := range regexp.MustCompile(`(?m)^  tollgate \[?([a-z-]+)`).FindAllStringSubmatch(out.String(), -1) {
		listed = append(listed, m[1])
	}
	slices.Sort(listed)
	if want := []string{"admin", "healthcheck", "migrate-key-layout", "serve", "token", "validate-config", "version"}; !slices.Equal(listed, want) {
		t.Errorf("tollgate help lists %q, want %q", listed, want)
	}
	for cmd := range labCommands {
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{cmd}, &out, &errOut, func(string) string { return "" })
		if code != 2 || !strings.Contains(errOut.String(), "tollgate-lab "+cmd) {
			t.Errorf("tollgate %s: exit %d, stderr %q; want 2, naming tollgate-lab %s", cmd, code, errOut.String(), cmd)
		}
	}
}
