package policyfile

import (
	"reflect"

	"go.yaml.in/yaml/v3"

	"github.com/tollgate-auth/tollgate/authguard"
)

// What internal/config, which reads the rest of a config file in the same
// words and with the same lines, takes from the policy format. They are
// the unexported helpers under names config can reach; nothing else
// should call them.

// LineIndex is the line of every key of a mapping, by its path.
type LineIndex = lineIndex

// ErrorAt is an *Error at line, naming path, with the message of format.
func ErrorAt(line int, path, format string, args ...any) *Error {
	return errorAt(line, path, format, args...)
}

// Said is another package's error err in the file's words msg, said of
// the Error's path when of (see Error).
func Said(msg string, err error, of bool) error { return &said{msg: msg, err: err, of: of} }

// SaysOf reports whether msg, a message config wrote, is said of a name.
func SaysOf(msg string) bool { return saysOf(msg) }

// DecodeError is the *Error of a failed yaml decode at path.
func DecodeError(path string, err error) error { return decodeError(path, err) }

// SyntaxError is the *Error of a file that is not YAML.
func SyntaxError(err error) error { return syntaxError(err) }

// At places e in a file whose keys are at lines (see Error).
func (e *Error) At(lines LineIndex) *Error { return e.at(lines) }

// UnknownKey is the error of a key k that is not one of valid, in the
// mapping at where ("" for the top level).
func UnknownKey(k *yaml.Node, valid []string, where string) error { return unknownKey(k, valid, where) }

// YAMLKeysOf lists the yaml tags of the fields of struct type t.
func YAMLKeysOf(t reflect.Type) []string { return yamlKeysOf(t) }

// Closest is the one name of names that word is most likely a misspelling
// of, or "".
func Closest(word string, names []string) string { return closest(word, names) }

// DidYouMean is `; did you mean "name"?` for the name of names closest to
// word, or "".
func DidYouMean(word string, names []string) string { return didYouMean(word, names) }

// PolicyFromNode lays the flows node of a config file over the built-in
// flows and compiles the result; its errors say "policy: ".
func PolicyFromNode(n *yaml.Node) (*authguard.Policy, error) { return policyFromNode(n) }

// TenantPolicy is a tenant's policy: its flows node laid over the file's
// (which is laid over the built-in flows), in the same format.
func TenantPolicy(fileFlows, tenantFlows *yaml.Node) (*authguard.Policy, error) {
	return tenantPolicy(fileFlows, tenantFlows)
}

// Add indexes the keys of n, at path, as the index of a flows mapping is.
func (idx LineIndex) Add(path string, n *yaml.Node) { idx.add(path, n) }

// PolicyError is the *Error of authguard's error about a whole policy: at
// no line, since no one flow is to blame.
func PolicyError(err error) error { return policyError(err) }
