package authguard

import "testing"

// TestStoreKey_SubjectTagsOnlyWhenAsked: with subject hash tags a key's
// subject hash (its first part, for a compound subject or an account's
// device) is in braces, so that Redis Cluster hashes the key by it; a mark
// goes before the braces; without them every key is as it was. The glob of
// an account's keys matches its keys and not the marked one in either
// layout.
func TestStoreKey_SubjectTagsOnlyWhenAsked(t *testing.T) {
	plain, tagged := keyspace{prefix: "tg"}, keyspace{prefix: "tg", tagged: true}
	const A, D, I = "AAAAAAAAAAAAAAAAAAAAA_", "DDDDDDDDDDDDDDDDDDDDD-", "IIIIIIIIIIIIIIIIIIIIII" // subject hashes
	tests := []struct {
		name        string
		ks          keyspace
		key         func(keyspace) string
		plain, tags string
	}{
		{"one subject", plain, func(ks keyspace) string { return storeKey(ks, "t", "login", "acct", A) }, "tg:t:login:acct:" + A, "tg:t:login:acct:{" + A + "}"},
		{"an account's device", plain, func(ks keyspace) string { return storeKey(ks, "t", "login", "dev.dev", A+".d") }, "tg:t:login:dev.dev:" + A + ".d", "tg:t:login:dev.dev:{" + A + "}.d"},
		{"a compound subject", plain, func(ks keyspace) string { return storeKeyOf(ks, "t", "login", "knownnet", A, I) }, "tg:t:login:knownnet:" + A + "." + I, "tg:t:login:knownnet:{" + A + "}." + I},
		{"a pair and a network", plain, func(ks keyspace) string { return storeKeyOf(ks, "t", "otp", "vdst.net", A+"."+D, I) }, "tg:t:otp:vdst.net:" + A + "." + D + "." + I, "tg:t:otp:vdst.net:{" + A + "}." + D + "." + I},
		{"a marked key", plain, func(ks keyspace) string { return markedKey(ks, "t", "login", deviceGenKey, "g", A) }, "tg:t:login:" + deviceGenKey + ":g" + A, "tg:t:login:" + deviceGenKey + ":g{" + A + "}"},
		{"an account's glob", plain, func(ks keyspace) string { return keyGlob(ks, "t", "*", "*", A) }, "tg:t:*:*:" + A + "*", "tg:t:*:*:{" + A + "}*"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, ok := SubjectTaggedKey(tt.plain); tt.name != "an account's glob" && (!ok || got != tt.tags) {
				t.Errorf("SubjectTaggedKey(%q) = %q, %v; want %q", tt.plain, got, ok, tt.tags)
			}
			if got := tt.key(plain); got != tt.plain {
				t.Errorf("untagged: %q, want %q", got, tt.plain)
			}
			if got := tt.key(tagged); got != tt.tags {
				t.Errorf("tagged: %q, want %q", got, tt.tags)
			}
		})
	}
}

// TestSubjectTaggedKey_LeavesWhatIsNotASubjectsKey: a migration renames the
// subjects' keys only: not an administrator's, the held index's, nor a key
// tagged already.
func TestSubjectTaggedKey_LeavesWhatIsNotASubjectsKey(t *testing.T) {
	for _, key := range []string{
		"tg:_admin:secretcheck", "tg:_admin:secretcheck:acme", "tg:acme:_admin:entries:v1",
		"tg:held:{acme}:account", "tg:t:login:acct:{A}", "tg:t:login:acct:", "other",
		"tg:challenge:r:hcaptcha:short", "tg:t:login:acct:not a hash, but 22 long",
	} {
		if got, ok := SubjectTaggedKey(key); ok {
			t.Errorf("SubjectTaggedKey(%q) = %q, want none", key, got)
		}
	}
}
