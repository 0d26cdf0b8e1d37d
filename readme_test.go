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

// The README and docs/ are read by engineers under attack, who jump around
// them by the README's contents and their cross-links. These tests keep both
// from rotting: a renamed or moved heading breaks a link silently on GitHub,
// so here it fails instead.

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

// docFiles are the Markdown files whose links are checked: the README, every
// file of docs/, and the READMEs beside what they document under deploy/.
func docFiles(tb testing.TB) []string {
	tb.Helper()
	files := []string{readmeFile, "BENCHMARKS.md", "CHANGELOG.md"}
	for _, pattern := range []string{"docs/*.md", "deploy/*/README.md"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			tb.Fatal(err)
		}
		files = append(files, m...)
	}
	return files
}

// anchorsOf caches the anchors of Markdown files' headings.
type anchorsOf map[string]map[string]bool

func (a anchorsOf) of(tb testing.TB, file string) map[string]bool {
	if m, ok := a[file]; ok {
		return m
	}
	m := map[string]bool{}
	for _, h := range readHeadings(tb, file) {
		m[h.anchor] = true
	}
	a[file] = m
	return m
}

// checkTarget reports what is wrong with a link target written in file
// (relative to file's directory; "#x" alone is a heading of file), or "":
// the file or directory must exist inside the repository, and an anchor must
// name a heading of a Markdown file.
func checkTarget(tb testing.TB, anchors anchorsOf, file, target string) string {
	path, anchor, hasAnchor := strings.Cut(target, "#")
	dest := file
	if path != "" {
		dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
		if rel, err := filepath.Rel(".", dest); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return "a file outside the repository"
		}
		if _, err := os.Stat(dest); err != nil {
			return err.Error()
		}
	}
	if !hasAnchor {
		return ""
	}
	if !strings.HasSuffix(dest, ".md") {
		return "an anchor into a file that is not Markdown"
	}
	if !anchors.of(tb, dest)[anchor] {
		return "names no heading of " + dest
	}
	return ""
}

// TestDocs_EveryLinkNamesAHeadingOrFileThatExists: every [text](#anchor) in
// README.md, docs/*.md and the deploy READMEs names one of its file's
// headings, every relative link names a file or directory of the
// repository (never one outside it), and one into a Markdown file with an
// anchor (docs/redis.md#…, BENCHMARKS.md#…) names a heading of that file. A
// section moved to another file breaks its old links silently on GitHub;
// here it fails.
func TestDocs_EveryLinkNamesAHeadingOrFileThatExists(t *testing.T) {
	anchors := anchorsOf{}
	for _, file := range docFiles(t) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		links := 0
		for i, line := range proseLines(string(b)) {
			for _, m := range markdownLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				links++
				if problem := checkTarget(t, anchors, file, target); problem != "" {
					t.Errorf("%s:%d: link to %s: %s", file, i+1, target, problem)
				}
			}
		}
		if file == readmeFile && links < 20 {
			t.Errorf("found %d relative links in %s; the link pattern no longer matches", links, file)
		}
	}
}

// repoURL is how the repository's own files are linked from where a
// relative link cannot go: alert rules' runbook_url, the dashboard, help
// texts.
var repoURL = regexp.MustCompile(`https://github\.com/tollgate-auth/tollgate/blob/main/([^\s'"<>)#]+)(?:#([^\s'"<>)]+))?`)

// TestDocs_EveryURLIntoTheRepositoryResolves: every URL of a file of this
// repository's main branch on GitHub (repoURL, with or without an anchor)
// written in the repository's own files (an alert's runbook, the
// dashboard's link, a doc) names a file that exists and, with an anchor, a
// heading of it.
func TestDocs_EveryURLIntoTheRepositoryResolves(t *testing.T) {
	anchors := anchorsOf{}
	found := 0
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "dist", "bin", "build":
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".md", ".go", ".yaml", ".yml", ".json", ".sh", ".ts", ".py", ".toml", "":
		default:
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range repoURL.FindAllStringSubmatch(line, -1) {
				found++
				target := m[1]
				if m[2] != "" {
					target += "#" + m[2]
				}
				if problem := checkTarget(t, anchors, "x", target); problem != "" {
					t.Errorf("%s:%d: %s: %s", path, i+1, m[0], problem)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 20 {
		t.Errorf("found %d URLs into the repository; the pattern no longer matches (the alert rules alone have 20)", found)
	}
}

// TestDocs_StayTheirSize: the README is what a newcomer reads in one
// sitting, design.md the design of record and BENCHMARKS.md the current
// figures; each grew into a manual or a diary before (1,817, 2,118 and 1,779
// lines). Detail belongs in the docs/ file of its subject, history in the
// CHANGELOG and in git.
func TestDocs_StayTheirSize(t *testing.T) {
	for file, most := range map[string]int{readmeFile: 300, "docs/design.md": 800, "BENCHMARKS.md": 400, "docs/layout.md": 60} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), "\n"); n > most {
			t.Errorf("%s has %d lines; keep it to %d and move the rest to the docs/ file of its subject", file, n, most)
		}
	}
}

// TestDocs_NameNoFileOutsideTheRepository: the docs stand alone. A design
// that refines a document the reader does not have (a shared DESIGN.md one
// directory up) cannot be checked by anyone who clones the repository.
func TestDocs_NameNoFileOutsideTheRepository(t *testing.T) {
	outside := regexp.MustCompile(`(?:\.\./)+[\w.-]+(?:/[\w.-]+)*`)
	for _, file := range docFiles(t) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, p := range outside.FindAllString(line, -1) {
				rel, err := filepath.Rel(".", filepath.Join(filepath.Dir(file), p))
				if err != nil || rel == ".." || strings.HasPrefix(rel, "..") {
					t.Errorf("%s:%d: names %s, outside the repository", file, i+1, p)
				}
			}
			if regexp.MustCompile(`\bDESIGN\b|shared/`).MatchString(line) {
				t.Errorf("%s:%d: refers to a design document outside the repository: %q", file, i+1, strings.TrimSpace(line))
			}
		}
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
