package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tollgate-auth/tollgate/breached/hibp"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/testkit"
)

// serveBreached runs serve on the config file at path (reloaded from it)
// until the test ends and returns the API's address and the log.
func serveBreached(t *testing.T, path string) (string, *testkit.SyncBuffer) {
	t.Helper()
	load := func() (*config.Config, error) { return config.Load(path, testkit.Env("TOLLGATE_SECRET", secret32)) }
	cfg, err := load()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	logs := new(testkit.SyncBuffer)
	addrs, done := make(chan net.Addr, 1), make(chan error, 1)
	go func() { done <- serve(ctx, cfg, logs, func(a net.Addr) { addrs <- a }, load) }()
	select {
	case a := <-addrs:
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
			if t.Failed() {
				t.Logf("logs:\n%s", logs.String())
			}
		})
		return a.String(), logs
	case err := <-done:
		cancel()
		t.Fatalf("serve: %v\n%s", err, logs.String())
	}
	return "", nil
}

// writeCorpus writes the hashes of passwords, count 3 each, as one file.
func writeCorpus(t *testing.T, path string, passwords ...string) {
	t.Helper()
	var b strings.Builder
	for _, pw := range passwords {
		p, s := hibp.Hash(pw)
		fmt.Fprintf(&b, "%s%s:3\r\n", p, s)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// breachedCount asks the server for pw's range and counts pw in it as a
// client does.
func breachedCount(t *testing.T, addr, pw string) (int, int64, int) {
	t.Helper()
	p, s := hibp.Hash(pw)
	resp, err := http.Get("http://" + addr + "/v1/breached/" + p)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, hibp.Count(body, s), len(body)
}

// A corpus is loaded at start and again on reload; one that does not load
// refuses the reload and the running one keeps answering.
func TestServe_TheBreachedCorpusLoadsAtStartAndOnReload(t *testing.T) {
	dir := t.TempDir()
	corpus, path := filepath.Join(dir, "pwned.txt"), filepath.Join(dir, "tollgate.yaml")
	writeCorpus(t, corpus, "password", "123456")
	os.WriteFile(path, []byte("listen: 127.0.0.1:0\nbreached:\n  corpus: "+corpus+"\n"), 0o600)
	addr, logs := serveBreached(t, path)
	if !strings.Contains(logs.String(), `"msg":"breached-password corpus loaded","hashes":2,`) {
		t.Errorf("no load line with the count in the log:\n%s", logs.String())
	}
	status, n, size := breachedCount(t, addr, "password")
	if status != 200 || n != 3 {
		t.Fatalf("password: %d, count %d; want 200, 3", status, n)
	}
	reload := func() (int, string) {
		resp, err := http.Post("http://"+addr+"/v1/admin/reload", "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct{ Detail string }
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out.Detail
	}

	writeCorpus(t, corpus, "hunter2")
	if status, detail := reload(); status != 200 {
		t.Fatalf("reload: %d %s", status, detail)
	}
	if _, n, got := breachedCount(t, addr, "hunter2"); n != 3 || got != size {
		t.Errorf("after the reload: hunter2 count %d in %d bytes; want 3 in %d", n, got, size)
	}
	if _, n, _ := breachedCount(t, addr, "password"); n != 0 {
		t.Errorf("after the reload: password count %d, want 0 (the old corpus is gone)", n)
	}

	os.WriteFile(corpus, []byte("not a hash\n"), 0o600)
	status, detail := reload()
	if status != http.StatusConflict || !strings.Contains(detail, "pwned.txt line 1") || strings.Contains(detail, "not a hash") {
		t.Fatalf("reload of a malformed corpus = %d %q, want 409 naming the file and line, not the line's text", status, detail)
	}
	if _, n, _ := breachedCount(t, addr, "hunter2"); n != 3 {
		t.Errorf("after the refused reload: hunter2 count %d, want 3 (the running corpus stays)", n)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "tollgate_breached_corpus_hashes 1\n") {
		t.Errorf("/metrics lacks tollgate_breached_corpus_hashes 1")
	}

	// Without the section, the route is off.
	os.WriteFile(path, []byte("listen: 127.0.0.1:0\n"), 0o600)
	if status, detail := reload(); status != 200 {
		t.Fatalf("reload: %d %s", status, detail)
	}
	if status, _, _ := breachedCount(t, addr, "hunter2"); status != http.StatusNotFound {
		t.Errorf("without a breached section: %d, want 404", status)
	}
}

// A corpus past max_bytes stops the server from starting, with an error
// that says so, before it is held.
func TestServe_ACorpusPastMaxBytesStopsTheStart(t *testing.T) {
	dir := t.TempDir()
	corpus := filepath.Join(dir, "pwned.txt")
	f, err := os.Create(corpus)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	// 16 MiB, the least max_bytes, holds the 4 MiB table and 571,950
	// hashes: one more is refused.
	for i := range (16<<20-(1<<20+1)*4)/22 + 1 {
		fmt.Fprintf(w, "%040X:1\n", i)
	}
	w.Flush()
	f.Close()
	cfg, err := config.Parse([]byte("listen: 127.0.0.1:0\nbreached:\n  corpus: " + corpus + "\n  max_bytes: 16MiB\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Secret = []byte(secret32)
	// A server that starts anyway is stopped at once, so that the test
	// fails rather than waits.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err = serve(ctx, cfg, io.Discard, func(net.Addr) { cancel() }, nil)
	if err == nil || !strings.Contains(err.Error(), "larger than max_bytes") {
		t.Fatalf("serve = %v, want the corpus refused past max_bytes", err)
	}
}

// The example's commented-out breached section loads and says the
// defaults: what it shows is what an empty section gives.
func TestExampleConfig_ItsBreachedSectionLoadsWithTheDefaults(t *testing.T) {
	data, err := os.ReadFile("tollgate.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	corpus := filepath.Join(t.TempDir(), "pwned.txt")
	writeCorpus(t, corpus, "password")
	section := strings.ReplaceAll(uncomment(t, string(data), "breached"), "/var/lib/tollgate/pwnedpasswords.txt", corpus)
	cfg, err := config.Parse([]byte(section))
	if err != nil {
		t.Fatalf("the example's breached section: %v\n%s", err, section)
	}
	empty, err := config.Parse([]byte("breached:\n  corpus: " + corpus + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	got, want := *cfg.Breached, *empty.Breached
	want.UpstreamTimeout, want.CacheEntries, want.CacheTTL = 2e9, 1024, 3600e9 // the defaults the breached package applies to zero
	if got != want {
		t.Errorf("the example's section = %+v, want the defaults %+v", got, want)
	}
}
