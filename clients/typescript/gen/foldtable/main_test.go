package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// src/foldtable.ts is what the generator writes from the golang.org/x/text
// of go.mod: a new x/text (or Go release, which picks its Unicode tables)
// fails here until the table is written again, so that the TypeScript
// client never folds with other Unicode data than tollgate.
//
// Writing the table takes a second of CPU (every code point folded), and
// its answer depends only on this test binary (the generator, x/text and
// Go's Unicode tables are all linked into it) and the file it compares:
// once both were found to agree, a mark named by their joint hash in the
// user's cache directory lets a later run with the same binary and the
// same file pass without writing the table again. Any other binary or
// file, a stale table among them, is written and compared in full.
func TestTable_IsCurrent(t *testing.T) {
	path := filepath.Join("..", "..", "src", "foldtable.ts")
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	mark := currentMark(t, got)
	if mark != "" {
		if _, err := os.Stat(mark); err == nil {
			return
		}
	}
	// The fold makes garbage of every code point's strings over a heap
	// of a few MB: a fifth less CPU collecting it less often.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	want, err := table()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("src/foldtable.ts is stale: run go run ./gen/foldtable in clients/typescript")
	}
	if mark != "" && os.MkdirAll(filepath.Dir(mark), 0o755) == nil {
		os.WriteFile(mark, nil, 0o644) // without it the next run writes the table again
	}
}

// currentMark is the path of the mark that this test binary found table
// to be the file's text, or "" when there is no cache directory or the
// binary cannot be read (then the table is always written).
func currentMark(t *testing.T, table []byte) string {
	t.Helper()
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	f, err := os.Open(exe)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	h.Write([]byte{0})
	h.Write(table)
	return filepath.Join(dir, "tollgate", "foldtable-current", hex.EncodeToString(h.Sum(nil)))
}
