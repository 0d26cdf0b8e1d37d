// Package breached answers breached-password range requests in the format
// of Have I Been Pwned's Pwned Passwords range API, for GET
// /v1/breached/{prefix}: given the first 5 hex digits of a password's
// SHA-1, every breached hash that starts with them, as SUFFIX:COUNT lines.
// The caller finds its suffix among them on its own side (package
// breached/hibp), so tollgate sees the 5-digit prefix only, never the
// password, its hash or the account it belongs to.
//
// A range comes from a Corpus held in memory (Load: the Pwned Passwords
// downloader's directory of range files, or one file of SHA1:COUNT lines),
// or, without one, from an upstream range API, forwarded with Add-Padding
// and kept in a bounded cache. A corpus costs 22 bytes a hash (the whole
// 35-digit suffix and a 32-bit count: no truncation, no false positive)
// plus a 4 MiB offset table; a corpus that would pass its max_bytes is
// refused before it is held.
//
// Every answer has the same number of lines and the same length, whatever
// the prefix, the range's hashes followed by padding lines of count 0, and
// costs the same work: someone who sees only the answer's size (on the
// wire, under TLS) learns nothing of the prefix. The caller sees the
// counts, as it would from HIBP.
//
// What the prefix does not hide: a caller's range request and, soon after,
// its report with breached: true come from the same caller, so whoever
// reads tollgate's traffic or logs (tollgate itself logs no prefix) can
// link the prefix to the report's account by time. A prefix is shared by
// about a millionth of all hashes, some 900 breached ones in the full
// corpus, so the link narrows the password to one of those; a caller that
// must not give that much can check against its own copy of the corpus,
// or HIBP's, instead.
package breached
