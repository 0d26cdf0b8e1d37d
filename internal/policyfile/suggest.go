package policyfile

import (
	"fmt"
	"strings"
)

// closest is the one name of names that word is most likely a misspelling
// of, or "" when none is close: at most two edits away (an insertion, a
// deletion, a change or two neighbours swapped, ignoring case), and at most
// one edit per three letters of word, so that short words suggest nothing
// at random. On a tie the first of names wins.
func closest(word string, names []string) string {
	best, bestD := "", 0
	limit := min(2, max(1, len([]rune(word))/3))
	for _, n := range names {
		if n == word {
			continue
		}
		d := editDistance(strings.ToLower(word), strings.ToLower(n))
		if d <= limit && (best == "" || d < bestD) {
			best, bestD = n, d
		}
	}
	return best
}

// didYouMean is `; did you mean "name"?` for the name of names closest to
// word, or "" when none is close.
func didYouMean(word string, names []string) string {
	if c := closest(word, names); c != "" {
		return fmt.Sprintf("; did you mean %q?", c)
	}
	return ""
}

// editDistance is the optimal string alignment distance between a and b:
// the fewest insertions, deletions, changes and swaps of neighbours that
// turn a into b, each part of the strings edited at most once.
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	// d[i][j] is the distance between x[:i] and y[:j].
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}
