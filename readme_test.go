package tollgate_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// The README is read by engineers under attack, who jump around it by its
// table of contents and its cross-links. These tests keep both from
// rotting: a renamed heading breaks a link silently on GitHub, so here it
// fails instead.

const readmeFile = "README.md"

// markdownLink matches a link's target: [text](target) or ![alt](target).
var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// heading is one Markdown heading outside code blocks.
type heading struct {
	level  int
	text   string
	anchor string
	line   int
}

// readHeadings returns a Markdown file's headings, outside fenced code
// blocks, with the anchors GitHub gives them (a repeated anchor gets -1,
// -2, ... as on GitHub).
func readHeadings(tb testing.TB, file string) []heading {
	tb.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		tb.Fatal(err)
	}
	var hs []heading
	seen := map[string]int{}
	for i, line := range proseLines(string(b)) {
		if line == "" {
			continue
		}
		level := len(line) - len(strings.TrimLeft(line, "#"))
		text, ok := strings.CutPrefix(line[level:], " ")
		if level == 0 || level > 6 || !ok {
			continue
		}
		text = strings.TrimSpace(text)
		anchor := githubAnchor(text)
		if n := seen[anchor]; n > 0 {
			seen[anchor]++
			anchor = fmt.Sprintf("%s-%d", anchor, n)
		} else {
			seen[anchor] = 1
		}
		hs = append(hs, heading{level: level, text: text, anchor: anchor, line: i + 1})
	}
	return hs
}

// proseLines returns a Markdown text's lines with those inside fenced code
// blocks (``` or ~~~, indented or not) and the fences themselves blanked,
// so that line numbers stay those of the file.
func proseLines(s string) []string {
	lines := strings.Split(s, "\n")
	fence := ""
	for i, line := range lines {
		t := strings.TrimSpace(line)
		switch {
		case fence == "" && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")):
			fence = t[:3]
			lines[i] = ""
		case fence != "":
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			lines[i] = ""
		}
	}
	return lines
}

// githubAnchor is the anchor GitHub gives a heading: lower case, spaces to
// hyphens, punctuation other than hyphens and underscores dropped (so the
// backticks, slashes, colons and question marks of README's headings go).
func githubAnchor(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestGithubAnchor(t *testing.T) {
	for heading, want := range map[string]string{
		"Changing the policy without a restart: SIGHUP or `POST /v1/admin/reload`": "changing-the-policy-without-a-restart-sighup-or-post-v1adminreload",
		"Walk-through: check → report → check":                                     "walk-through-check--report--check",
		"Tuning the policy — and seeing what it does":                              "tuning-the-policy--and-seeing-what-it-does",
		"10. What holds, and the test or scenario that shows it":                   "10-what-holds-and-the-test-or-scenario-that-shows-it",
		"Why was I delayed? `POST /v1/admin/explain`":                              "why-was-i-delayed-post-v1adminexplain",
	} {
		if got := githubAnchor(heading); got != want {
			t.Errorf("githubAnchor(%q) = %q, want %q", heading, got, want)
		}
	}
}

// TestReadme_EveryLinkNamesAHeadingOrFileThatExists: every [text](#anchor)
// in README.md names one of its headings, every relative link names a file
// or directory of the repository, and one into a Markdown file with an
// anchor (docs/design.md#…, BENCHMARKS.md#…) names a heading of that file.
func TestReadme_EveryLinkNamesAHeadingOrFileThatExists(t *testing.T) {
	b, err := os.ReadFile(readmeFile)
	if err != nil {
		t.Fatal(err)
	}
	anchorsOf := map[string]map[string]bool{}
	anchors := func(file string) map[string]bool {
		if a, ok := anchorsOf[file]; ok {
			return a
		}
		a := map[string]bool{}
		for _, h := range readHeadings(t, file) {
			a[h.anchor] = true
		}
		anchorsOf[file] = a
		return a
	}
	links := 0
	for i, line := range proseLines(string(b)) {
		for _, m := range markdownLink.FindAllStringSubmatch(line, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			links++
			path, anchor, hasAnchor := strings.Cut(target, "#")
			file := readmeFile
			if path != "" {
				file = filepath.FromSlash(path)
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s:%d: link to %s: %v", readmeFile, i+1, target, err)
					continue
				}
			}
			if !hasAnchor {
				continue
			}
			if !strings.HasSuffix(file, ".md") {
				t.Errorf("%s:%d: link %s: an anchor into a file that is not Markdown", readmeFile, i+1, target)
				continue
			}
			if !anchors(file)[anchor] {
				t.Errorf("%s:%d: link %s names no heading of %s", readmeFile, i+1, target, file)
			}
		}
	}
	if links < 20 {
		t.Errorf("found %d relative links in %s; the link pattern no longer matches", links, readmeFile)
	}
}

// TestReadme_ContentsListsEverySection: the table of contents at the top
// (the list under "## Contents") links every "##" section, in the
// README's order, and links nothing else than README's own headings; the
// "###" sections it lists are under their "##".
func TestReadme_ContentsListsEverySection(t *testing.T) {
	b, err := os.ReadFile(readmeFile)
	if err != nil {
		t.Fatal(err)
	}
	hs := readHeadings(t, readmeFile)
	lines := strings.Split(string(b), "\n")
	start, end := -1, len(lines)
	for i, h := range hs {
		if h.level == 2 && h.text == "Contents" {
			start = h.line
			if i+1 < len(hs) {
				end = hs[i+1].line - 1
			}
			break
		}
	}
	if start < 0 {
		t.Fatalf(`%s has no "## Contents" section`, readmeFile)
	}
	byAnchor := map[string]heading{}
	for _, h := range hs {
		byAnchor[h.anchor] = h
	}
	// The contents' links, in order.
	var listed []heading
	for i, line := range lines[start:end] {
		for _, m := range markdownLink.FindAllStringSubmatch(line, -1) {
			anchor, ok := strings.CutPrefix(m[1], "#")
			h, found := byAnchor[anchor]
			if !ok || !found {
				t.Errorf("%s:%d: the contents link %s, not a heading of the README", readmeFile, start+i+1, m[1])
				continue
			}
			listed = append(listed, h)
		}
	}
	var want []string
	for _, h := range hs {
		if h.level == 2 && h.text != "Contents" {
			want = append(want, h.anchor)
		}
	}
	var got []string
	for _, h := range listed {
		if h.level == 2 {
			got = append(got, h.anchor)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the contents list the ## sections\n  %s\nwant, in the README's order,\n  %s",
			strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	// Every ### listed comes after the ## listed before it, and before the next.
	for i, h := range listed {
		if i > 0 && h.line < listed[i-1].line {
			t.Errorf("the contents list %q after %q, which comes later in the README", h.text, listed[i-1].text)
		}
	}
}
