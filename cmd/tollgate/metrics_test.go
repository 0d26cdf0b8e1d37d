package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestServe_EvictionSeries: on the embedded memory store, /metrics counts
// the evictions of the main store and of the fallback, by class, from zero.
func TestServe_EvictionSeries(t *testing.T) {
	addr, _ := startServe(t, testConfig())
	res, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	for _, store := range []string{"main", "fallback"} {
		for _, class := range []string{"probation", "protected"} {
			if want := `tollgate_store_evictions_total{class="` + class + `",store="` + store + `"} 0`; !strings.Contains(string(body), want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	}
	if want := `tollgate_store_errors_total{call="check",flow="login",kind="full"} 0`; !strings.Contains(string(body), want) {
		t.Errorf("/metrics lacks %s", want)
	}
}
