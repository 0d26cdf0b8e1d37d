package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is set for release builds with -ldflags "-X main.version=v1.2.3";
// otherwise the module version of the build info is used: v1.2.3 for
// `go install …@v1.2.3`, "(devel)" for a build from a source tree.
var version = ""

// revision is set with -ldflags "-X main.revision=<commit>" by builds that
// record no VCS information (an image built from a context without .git);
// what -buildvcs recorded wins.
var revision = ""

// buildInfo says which build this binary is.
type buildInfo struct {
	Version  string // the release or module version
	Revision string // the commit, "" when not built from a Git tree
	Time     string // the commit's time (RFC 3339), "" when unknown
	Modified bool   // the tree had uncommitted changes
	Go       string // the Go version, such as go1.26.8
	Platform string // GOOS/GOARCH
}

// readBuildInfo reads this binary's build: -ldflags' version first, then
// what the Go toolchain recorded (debug.ReadBuildInfo; -buildvcs records
// the commit).
func readBuildInfo() buildInfo {
	b := buildInfo{Version: version, Revision: revision, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		if b.Version == "" {
			b.Version = "unknown"
		}
		return b
	}
	if b.Version == "" {
		b.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// printVersion writes `tollgate version`'s answer: the version on the first
// line (what scripts read), then one line for each of the rest.
func printVersion(w io.Writer) {
	b := readBuildInfo()
	fmt.Fprintf(w, "tollgate %s\n", b.Version)
	if b.Revision != "" {
		fmt.Fprintf(w, "commit:   %s\n", b.Revision)
	}
	if b.Time != "" {
		fmt.Fprintf(w, "time:     %s\n", b.Time)
	}
	if b.Revision != "" {
		fmt.Fprintf(w, "modified: %t\n", b.Modified)
	}
	fmt.Fprintf(w, "go:       %s %s\n", b.Go, b.Platform)
}
