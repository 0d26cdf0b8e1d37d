package svgplot

import "testing"

func TestNiceStepAndFormatTick(t *testing.T) {
	for _, tt := range []struct {
		raw  float64
		want float64
	}{{0.3, 1}, {1, 1}, {1.2, 2}, {3, 5}, {7, 10}, {12, 20}, {480, 500}, {5000, 5000}} {
		if got := NiceStep(tt.raw); got != tt.want {
			t.Errorf("NiceStep(%v) = %v, want %v", tt.raw, got, tt.want)
		}
	}
	for v, want := range map[float64]string{0: "0", 950: "950", 9999: "9999", 20000: "20k"} {
		if got := FormatTick(v); got != want {
			t.Errorf("FormatTick(%v) = %q, want %q", v, got, want)
		}
	}
	if got, want := Esc(`a<b & "c"`), "a&lt;b &amp; &#34;c&#34;"; got != want {
		t.Errorf("Esc = %q, want %q", got, want)
	}
}
