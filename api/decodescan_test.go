package api

// The scanning decoder that decodeJSON replaced, kept as the oracle of
// FuzzDecodeDifferential: internal/jsonscan's functions (now internal/testkit/jsonoracle), the key scan and
// the decoding through encoding/json that followed it, as they were.

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/tollgate-auth/tollgate/internal/testkit/jsonoracle"
)

// decodeJSONScan is decodeJSON by scanning keys with jsonscan.
func decodeJSONScan(body []byte, fs fields, v any) (present uint64, err error) {
	if !utf8.Valid(body) {
		return 0, newProblem(kindMalformedJSON, "", "the body must be UTF-8")
	}
	// json.Valid checks the syntax of exactly one value with nothing but
	// white space around it, without allocating.
	if !json.Valid(body) {
		return 0, syntaxProblem(body)
	}
	present, err = scanKeys(body, fs)
	if err != nil {
		return 0, err
	}
	for i, f := range fs {
		if f.required && present&(1<<i) == 0 {
			return 0, newProblem(kindMissingField, f.name, "is required")
		}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if i := fs.index(topKey(te.Field)); i >= 0 {
				return 0, newProblem(kindInvalidField, fs[i].name, "must be "+fs[i].want)
			}
		}
		// scanKeys has seen every key and json.Valid the syntax: nothing
		// else is expected here.
		return 0, newProblem(kindMalformedJSON, "", "the body does not match the request schema")
	}
	return present, nil
}

func topKey(path string) string {
	k, _, _ := strings.Cut(path, ".")
	return k
}

// indexBytes is index for a key still in the body (no allocation).
func (fs fields) indexBytes(key []byte) int {
	for i, f := range fs {
		if string(key) == f.name {
			return i
		}
	}
	return -1
}

// scanKeys walks the top level of body, which json.Valid has accepted, and
// returns the set of fs's keys present with a non-null value. It rejects a
// body that is not an object, keys fs does not list and keys given twice:
// encoding/json's struct decoding alone would take the last of two equal
// keys and match keys case-insensitively.
func scanKeys(body []byte, fs fields) (present uint64, err error) {
	i := jsonoracle.SkipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return 0, newProblem(kindMalformedJSON, "", "the body must be a JSON object")
	}
	var seen uint64
	i++
	for {
		i = jsonoracle.SkipSpace(body, i)
		if i >= len(body) || body[i] == '}' {
			return present, nil
		}
		if body[i] == ',' {
			i = jsonoracle.SkipSpace(body, i+1)
		}
		end := jsonoracle.StringEnd(body, i)
		raw := body[i:end]
		k := -1
		if len(raw) >= 2 {
			k = fs.indexBytes(raw[1 : len(raw)-1])
		}
		if k < 0 && bytes.IndexByte(raw, '\\') >= 0 {
			var key string
			if json.Unmarshal(raw, &key) == nil {
				k = fs.index(key)
			}
		}
		if k < 0 {
			var key string
			_ = json.Unmarshal(raw, &key)
			return 0, unknownKey(key, "is not a field of this request (keys are case-sensitive)", "the body has a key that is not a field of this request")
		}
		if seen&(1<<k) != 0 {
			return 0, newProblem(kindDuplicateField, fs[k].name, "appears more than once")
		}
		seen |= 1 << k
		i = jsonoracle.SkipSpace(body, end)
		i = jsonoracle.SkipSpace(body, i+1) // the colon
		if i < len(body) && body[i] != 'n' {
			present |= 1 << k
		}
		i = jsonoracle.ValueEnd(body, i)
	}
}
