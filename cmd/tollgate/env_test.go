package main

import (
	"context"
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"io"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// envReaders are the functions whose string-literal arguments name
// environment variables; fromEnvOrFile reads NAME and NAME_FILE.
var envReaders = map[string]bool{"Getenv": true, "LookupEnv": true, "getenv": true, "fromEnvOrFile": true}

var envName = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// readEnvVars parses every Go file of the module linked into this binary
// and returns the environment variables its calls read, by name.
func readEnvVars(t *testing.T) map[string]string {
	t.Helper()
	deps := serverDeps(t)
	read := map[string]string{}
	fset := gotoken.NewFileSet()
	for _, d := range deps {
		for _, name := range d.GoFiles {
			path := filepath.Join(d.Dir, name)
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				fn := ""
				switch f := call.Fun.(type) {
				case *ast.Ident:
					fn = f.Name
				case *ast.SelectorExpr:
					fn = f.Sel.Name
				}
				if !envReaders[fn] {
					return true
				}
				for _, arg := range call.Args {
					lit, ok := arg.(*ast.BasicLit)
					if !ok || lit.Kind != gotoken.STRING {
						continue
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil || !envName.MatchString(v) {
						continue
					}
					read[v] = fset.Position(lit.Pos()).String()
					if fn == "fromEnvOrFile" {
						read[v+"_FILE"] = fset.Position(lit.Pos()).String()
					}
				}
				return true
			})
		}
	}
	return read
}

// A new user could not find the Redis variables in `tollgate help`; now help
// lists envVars, and this fails when the code reads a variable that is not
// in it (or it lists one the code no longer reads).
func TestHelp_ListsEveryVariableTheCodeReads(t *testing.T) {
	read := readEnvVars(t)
	for _, want := range []string{"TOLLGATE_SECRET", "TOLLGATE_SECRET_FILE", "TOLLGATE_REDIS_URL", "TOLLGATE_TOKEN"} {
		if read[want] == "" {
			t.Fatalf("the scan found no read of %s: the test no longer sees what the code reads", want)
		}
	}
	var help strings.Builder
	if code := run(context.Background(), []string{"help"}, &help, io.Discard, func(string) string { return "" }); code != 0 {
		t.Fatalf("help exited %d", code)
	}
	listed := map[string]bool{}
	for _, v := range envVars {
		listed[v.name] = true
		if !strings.Contains(help.String(), "\n  "+v.name+" ") && !strings.Contains(help.String(), "\n  "+v.name+"\n") {
			t.Errorf("tollgate help does not list %s", v.name)
		}
		if read[v.name] == "" {
			t.Errorf("envVars lists %s, which no code linked into the binary reads", v.name)
		}
	}
	var missing []string
	for name, at := range read {
		if !listed[name] {
			missing = append(missing, name+" (read at "+at+")")
		}
	}
	slices.Sort(missing)
	for _, m := range missing {
		t.Errorf("tollgate help does not list %s: add it to envVars", m)
	}
}
