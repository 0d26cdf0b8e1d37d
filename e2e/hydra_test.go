package e2e_test

import (
	"strings"
	"testing"
)

// hydraOutput is hydra 9.4's output around the lines that tell its ends
// apart; body is what it printed between its banner and its last line.
func hydraOutput(body string) string {
	return "Hydra v9.4 (c) 2022 by van Hauser/THC & David Maciejak - Please do not use in military or secret service organizations, or for illegal purposes (this is non-binding, these *** ignore laws and ethics anyway).\n\n" +
		"Hydra (https://github.com/vanhauser-thc/thc-hydra) starting at 2026-12-06 09:00:07\n" +
		"[INFORMATION] escape sequence \\: detected in module option, no parameter verification is performed.\n" +
		"[DATA] max 16 tasks per 1 server, overall 16 tasks, 100 login tries (l:1/p:100), ~7 tries per task\n" +
		"[DATA] attacking http-post-form://127.0.0.1:46329/admin/login/?next=/admin/:username=^USER^&password=^PASS^:S=Location\\: /admin/\n" +
		body +
		"Hydra (https://github.com/vanhauser-thc/thc-hydra) finished at 2026-12-06 09:00:10\n"
}

// TestHydraCutShort_OnlyHydrasOwnMiscountIsSettledNotAConnectError: the
// e2e tests let a hydra run that exited 255 count only when hydra's own
// bookkeeping cut it short (the whole list handed out, n tasks cut);
// hydra failing to reach the proxy, or any other error it reports, still
// fails them.
func TestHydraCutShort_OnlyHydrasOwnMiscountIsSettledNotAConnectError(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		wantCut int
		wantOK  bool
	}{
		{"the miscount, as CI and a loaded machine printed it", "1 of 1 target completed, 0 valid password found\n" +
			"[WARNING] Writing restore file because 1 final worker threads did not complete until end.\n" +
			"[ERROR] 1 target did not resolve or could not be connected\n" +
			"[ERROR] 0 target did not complete\n", 1, true},
		{"the miscount cutting two tasks", "1 of 1 target completed, 0 valid password found\n" +
			"[WARNING] Writing restore file because 2 final worker threads did not complete until end.\n" +
			"[ERROR] 2 targets did not resolve or could not be connected\n" +
			"[ERROR] 0 target did not complete\n", 2, true},
		{"a clean run", "1 of 1 target completed, 0 valid password found\n", 0, false},
		{"the proxy refusing every connection", "[ERROR] Child with pid 27031 terminating, cannot connect\n" +
			"[ERROR] Child with pid 27060 terminating, cannot connect\n" +
			"[ERROR] Child with pid 27097 terminating, cannot connect\n" +
			"[ERROR] all children were disabled due too many connection errors\n" +
			"0 of 1 target completed, 0 valid password found\n", 0, false},
		{"a connect error before the miscount", "[ERROR] Child with pid 27031 terminating, cannot connect\n" +
			"1 of 1 target completed, 0 valid password found\n" +
			"[WARNING] Writing restore file because 1 final worker threads did not complete until end.\n" +
			"[ERROR] 1 target did not resolve or could not be connected\n" +
			"[ERROR] 0 target did not complete\n", 0, false},
		{"the target disabled, its list not handed out", "[ERROR] Too many connect errors to target, disabling http-post-form://127.0.0.1:46329\n" +
			"0 of 1 target completed, 0 valid password found\n" +
			"[WARNING] Writing restore file because 1 final worker threads did not complete until end.\n" +
			"[ERROR] 1 target did not resolve or could not be connected\n" +
			"[ERROR] 0 target did not complete\n", 0, false},
		{"a task crashed", "[ERROR] children crashed! (3)\n" +
			"1 of 1 target completed, 0 valid password found\n" +
			"[WARNING] Writing restore file because 1 final worker threads did not complete until end.\n" +
			"[ERROR] 1 target did not resolve or could not be connected\n" +
			"[ERROR] 0 target did not complete\n", 0, false},
		{"the list not all handed out", "0 of 1 target completed, 0 valid password found\n" +
			"[WARNING] Writing restore file because 1 final worker threads did not complete until end.\n" +
			"[ERROR] 1 target did not resolve or could not be connected\n" +
			"[ERROR] 0 target did not complete\n", 0, false},
		{"the cut count disagreeing with itself", "1 of 1 target completed, 0 valid password found\n" +
			"[WARNING] Writing restore file because 1 final worker threads did not complete until end.\n" +
			"[ERROR] 2 targets did not resolve or could not be connected\n" +
			"[ERROR] 0 target did not complete\n", 0, false},
		{"no summary", "[WARNING] Writing restore file because 1 final worker threads did not complete until end.\n" +
			"[ERROR] 1 target did not resolve or could not be connected\n" +
			"[ERROR] 0 target did not complete\n", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cut, ok := hydraCutShort(hydraOutput(tt.body))
			if cut != tt.wantCut || ok != tt.wantOK {
				t.Errorf("hydraCutShort = %d, %v; want %d, %v", cut, ok, tt.wantCut, tt.wantOK)
			}
		})
	}
}

// FuzzHydraCutShort: whatever hydra prints, the reading never panics, and
// it settles a run only when hydra reported the tasks it cut.
func FuzzHydraCutShort(f *testing.F) {
	f.Add(hydraOutput("1 of 1 target completed, 0 valid password found\n" +
		"[WARNING] Writing restore file because 1 final worker threads did not complete until end.\n" +
		"[ERROR] 1 target did not resolve or could not be connected\n" +
		"[ERROR] 0 target did not complete\n"))
	f.Add(hydraOutput("1 of 1 target completed, 0 valid password found\n"))
	f.Add("")
	f.Fuzz(func(t *testing.T, out string) {
		cut, ok := hydraCutShort(out)
		if ok && (cut < 1 || !strings.Contains(out, "final worker threads did not complete")) {
			t.Errorf("hydraCutShort settles a run with %d cut from output without the cut tasks:\n%s", cut, out)
		}
		if !ok && cut != 0 {
			t.Errorf("hydraCutShort = %d, false", cut)
		}
	})
}
