package config

import (
	"strings"
	"testing"
)

// The sizes the documentation gives for the held-subjects index are the
// sizes it takes: 0 (off) and 1MiB parse; past 1GiB, or not a size, is an
// error naming the setting. The memory limit's 16MiB floor is not this
// setting's: a small index is a small bound, not a mistake.
func TestParse_HeldIndexTakesTheDocumentedSizes(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"1MiB", 1 << 20},
		{"64KiB", 64 << 10},
		{"1GiB", 1 << 30},
	} {
		cfg, err := Parse([]byte("store:\n  held_index_bytes: " + tt.in + "\n"))
		if err != nil {
			t.Errorf("held_index_bytes %s: %v", tt.in, err)
			continue
		}
		if cfg.HeldIndexBytes != tt.want {
			t.Errorf("held_index_bytes %s = %d, want %d", tt.in, cfg.HeldIndexBytes, tt.want)
		}
	}
	for _, in := range []string{"2GiB", "lots", "-1"} {
		_, err := Parse([]byte("store:\n  held_index_bytes: " + in + "\n"))
		if err == nil || !strings.Contains(err.Error(), "store.held_index_bytes") {
			t.Errorf("held_index_bytes %s: %v, want an error naming store.held_index_bytes", in, err)
		}
	}
}
