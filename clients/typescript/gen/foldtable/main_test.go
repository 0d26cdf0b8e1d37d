package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// src/foldtable.ts is what the generator writes from the golang.org/x/text
// of go.mod: a new x/text (or Go release, which picks its Unicode tables)
// fails here until the table is written again, so that the TypeScript
// client never folds with other Unicode data than tollgate.
func TestTable_IsCurrent(t *testing.T) {
	want, err := table()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "..", "src", "foldtable.ts"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("src/foldtable.ts is stale: run go run ./gen/foldtable in clients/typescript")
	}
}
