// Package challenge is tollgate's answer to a captcha verdict that works
// out of the box: a built-in proof-of-work challenge, or a provider CAPTCHA
// (Cloudflare Turnstile, hCaptcha, reCAPTCHA) that tollgate verifies
// server side, and the user's pending submission kept sealed across it.
//
// A proof-of-work challenge is a signed, expiring, single-use token: the
// browser finds a nonce such that SHA-256(token || nonce) starts with
// Difficulty zero bits (the token's bytes as sent, the nonce as 8 bytes
// big-endian), with Web Crypto, by a small script tollgate serves itself
// (Solver) under a strict Content-Security-Policy and without cookies.
// Proof of work prices automation; it does not prove a human. At the
// default 15 bits a solution takes 32,768 hashes on average (the count is
// geometric: one in twenty takes three times that). Web Crypto's digests
// run at some 50,000 a second in Chromium on a busy 2-core server, so
// about a second on a phone; a machine that computes SHA-256 natively
// does the same work in milliseconds. It makes an attack of many
// attempts cost CPU time per attempt, and nothing more.
//
// A provider's response is verified by POSTing the form fields secret,
// response and (optionally) remoteip to the provider's siteverify URL; the
// answer passes only when it is JSON whose success is true. A network
// error, a timeout, a non-200 status or an answer that does not parse is a
// failure, never a pass: the challenge fails closed, and the user is asked
// again.
//
// A submission that met a challenge (the login form's method, path,
// content type and body) is held sealed with AES-256-GCM under a key
// derived from the server's secret, under a random handle, for a short
// time; the page holds only the handle and the challenge. It is given back
// once, to the caller that redeems a solved challenge bound to that handle.
//
// Spent challenges and pending submissions live in a Store: in memory for
// one instance (NewMemoryStore), or in Redis for several behind one Redis
// (NewRedisStore), so that a challenge solved once is spent on all of them.
package challenge
