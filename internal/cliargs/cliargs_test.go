package cliargs

import (
	"flag"
	"io"
	"slices"
	"testing"
)

func TestParse_FlagsAnywhere(t *testing.T) {
	for _, tt := range []struct {
		args  []string
		paths []string
		json  bool
	}{
		{[]string{"a", "b"}, []string{"a", "b"}, false},
		{[]string{"-json", "a"}, []string{"a"}, true},
		{[]string{"a", "-json", "b"}, []string{"a", "b"}, true},
		{[]string{"a", "--", "-json"}, []string{"a", "-json"}, false},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		j := fs.Bool("json", false, "")
		paths, err := Parse(fs, tt.args)
		if err != nil || !slices.Equal(paths, tt.paths) || *j != tt.json {
			t.Errorf("Parse(%q) = %q, json %v, %v; want %q, json %v", tt.args, paths, *j, err, tt.paths, tt.json)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := Parse(fs, []string{"a", "-nope"}); err == nil {
		t.Error("an unknown flag after a path was accepted")
	}
}
