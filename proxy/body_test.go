package proxy

import (
	"errors"
	"testing"
)

func TestReadFields(t *testing.T) {
	form := Route{Body: Form, Account: "u", Password: "p", Destination: "phone", ChannelField: "ch"}
	jsonRt := Route{Body: JSON, Account: "/user/name", Password: "/p"}
	mp := "--B\r\nContent-Disposition: form-data; name=\"u\"\r\n\r\nann\r\n" +
		"--B\r\nContent-Disposition: form-data; name=\"u\"; filename=\"u.txt\"\r\n\r\nnot a field\r\n" +
		"--B\r\nContent-Disposition: form-data; name=\"p\"\r\n\r\nsecret\r\n--B--\r\n"
	tests := []struct {
		name             string
		rt               Route
		query, ct, body  string
		account, pw, dst string
		err              error
	}{
		{"urlencoded", form, "", "application/x-www-form-urlencoded", "u=ann&p=s+e%26cret&x=1", "ann", "s e&cret", "", nil},
		{"the query string", form, "u=ann&p=pw", "", "", "ann", "pw", "", nil},
		{"query and body together", form, "u=ann", "application/x-www-form-urlencoded", "p=pw", "ann", "pw", "", nil},
		{"a charset parameter", form, "", "application/x-www-form-urlencoded; charset=UTF-8", "u=ann", "ann", "", "", nil},
		{"multipart, a file part is no field", form, "", "multipart/form-data; boundary=B", mp, "ann", "secret", "", nil},
		{"a body of another type is not read", form, "u=ann", "text/plain", "u=eve", "ann", "", "", nil},
		{"no content type: not read", form, "", "", "u=eve", "", "", "", nil},
		{"the destination", form, "", "application/x-www-form-urlencoded", "phone=%2B44+7400&ch=sms", "", "", "+44 7400", nil},
		{"a field twice in the body", form, "", "application/x-www-form-urlencoded", "u=a&u=b", "", "", "", errRepeated},
		{"a field in query and body", form, "u=a", "application/x-www-form-urlencoded", "u=b", "", "", "", errRepeated},
		{"a field twice in multipart", form, "", "multipart/form-data; boundary=B",
			"--B\r\nContent-Disposition: form-data; name=\"u\"\r\n\r\na\r\n--B\r\nContent-Disposition: form-data; name=\"u\"\r\n\r\nb\r\n--B--\r\n",
			"", "", "", errRepeated},
		{"a field of no interest twice is fine", form, "", "application/x-www-form-urlencoded", "x=1&x=2&u=a", "a", "", "", nil},
		{"a bad escape", form, "", "application/x-www-form-urlencoded", "u=%zz", "", "", "", errMalformed},
		{"a semicolon", form, "", "application/x-www-form-urlencoded", "u=a;p=b", "", "", "", errMalformed},
		{"multipart without a boundary", form, "", "multipart/form-data", "x", "", "", "", errMalformed},
		{"multipart that does not parse", form, "", "multipart/form-data; boundary=B", "--B\r\nnonsense", "", "", "", errMalformed},
		{"json", jsonRt, "", "application/json", `{"user":{"name":"ann"},"p":"pw"}`, "ann", "pw", "", nil},
		{"json+suffix", jsonRt, "", "application/vnd.api+json", `{"user":{"name":"ann"}}`, "ann", "", "", nil},
		{"json without content type", jsonRt, "", "", `{"user":{"name":"ann"}}`, "ann", "", "", nil},
		{"json null", jsonRt, "", "application/json", `{"user":{"name":null}}`, "", "", "", nil},
		{"json empty body", jsonRt, "", "application/json", ``, "", "", "", nil},
		{"json twice", jsonRt, "", "application/json", `{"user":{"name":"a","name":"b"}}`, "", "", "", errMalformed},
		{"json not a string", jsonRt, "", "application/json", `{"user":{"name":["a"]}}`, "", "", "", errNotString},
		{"json invalid UTF-8", jsonRt, "", "application/json", "{\"user\":{\"name\":\"\xff\"}}", "", "", "", errMalformed},
		{"json trailing garbage", jsonRt, "", "application/json", `{"user":{"name":"a"}} x`, "", "", "", errMalformed},
		{"json as a form", jsonRt, "", "application/x-www-form-urlencoded", `{"user":{"name":"a"}}`, "", "", "", errUnsupportedType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := readFields(&tt.rt, tt.query, tt.ct, []byte(tt.body))
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if err != nil {
				return
			}
			if f.account != tt.account || f.password != tt.pw || f.destination != tt.dst {
				t.Errorf("fields = %q %q %q, want %q %q %q", f.account, f.password, f.destination, tt.account, tt.pw, tt.dst)
			}
		})
	}
}

func TestParsePointer(t *testing.T) {
	tests := []struct {
		p    string
		want []string
		ok   bool
	}{
		{"", nil, true},
		{"/a", []string{"a"}, true},
		{"/a/b", []string{"a", "b"}, true},
		{"/", []string{""}, true},
		{"/a~1b/~0", []string{"a/b", "~"}, true},
		{"/~01", []string{"~1"}, true},
		{"a", nil, false},
		{"/~", nil, false},
		{"/~2", nil, false},
	}
	for _, tt := range tests {
		got, err := parsePointer(tt.p)
		if (err == nil) != tt.ok || len(got) != len(tt.want) {
			t.Errorf("parsePointer(%q) = %q, %v", tt.p, got, err)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("parsePointer(%q) = %q, want %q", tt.p, got, tt.want)
			}
		}
	}
}
