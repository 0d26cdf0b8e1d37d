package conformance_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tollgate-auth/tollgate/internal/lab/conformance"
)

// root is the repository's root, from this package's directory.
const root = "../../.."

// TestEvidence_EveryTestScenarioAndSectionNamedExists: a report citing a
// test that was renamed, a scenario that was deleted or a README section
// that moved would point an auditor at nothing.
func TestEvidence_EveryTestScenarioAndSectionNamedExists(t *testing.T) {
	testFuncs := map[string]bool{}
	funcRE := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, "_test.go") {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range funcRE.FindAllStringSubmatch(string(data), -1) {
				testFuncs[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]map[string]bool{}
	for _, p := range conformance.Profiles() {
		for _, cfg := range []string{"", "preset"} {
			var rep *conformance.Report
			if cfg == "" {
				rep = report(t, p, nil, nil)
			} else {
				data, _ := conformance.Preset(p)
				rep = report(t, p, parse(t, string(data)), nil)
			}
			for _, r := range rep.Requirements {
				for _, e := range r.Evidence {
					switch e.Kind {
					case conformance.EvidenceTest:
						if !testFuncs[e.Name] {
							t.Errorf("%s %s cites %s, which no _test.go file defines", p, r.ID, e.Name)
						}
					case conformance.EvidenceScenario:
						if e.Flow == "" { // a repository file, not a run
							if _, err := os.Stat(filepath.Join(root, e.Name)); err != nil {
								t.Errorf("%s %s cites %s: %v", p, r.ID, e.Name, err)
							}
						}
					case conformance.EvidenceDoc:
						file, anchor, _ := strings.Cut(e.Name, "#")
						if anchors[file] == nil {
							anchors[file] = headingAnchors(t, filepath.Join(root, file))
						}
						if anchor != "" && !anchors[file][anchor] {
							t.Errorf("%s %s cites %s: %s has no such heading", p, r.ID, e.Name, file)
						}
					case conformance.EvidenceSearch:
					default:
						t.Errorf("%s %s: evidence of unknown kind %q", p, r.ID, e.Kind)
					}
				}
			}
		}
	}
}

// headingAnchors are the GitHub anchors of a Markdown file's headings.
func headingAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	drop := regexp.MustCompile(`[^\p{L}\p{N} _-]`)
	fenced := false
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		out[strings.ReplaceAll(drop.ReplaceAllString(h, ""), " ", "-")] = true
	}
	return out
}
