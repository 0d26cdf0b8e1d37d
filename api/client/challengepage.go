package client

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"html/template"
	"net/http"
	"strconv"
	"strings"
)

// widget is what a provider's challenge page loads: its script, the
// element it renders into, and the origins its scripts, frames, styles and
// calls come from, as the providers document them for a CSP (tollgate's
// challenge/page.go has the same).
type widget struct{ script, class, origins string }

var widgets = map[string]widget{
	ChallengeTurnstile: {"https://challenges.cloudflare.com/turnstile/v0/api.js", "cf-turnstile",
		"https://challenges.cloudflare.com"},
	ChallengeHCaptcha: {"https://js.hcaptcha.com/1/api.js", "h-captcha", "https://hcaptcha.com https://*.hcaptcha.com"},
	ChallengeReCAPTCHA: {"https://www.google.com/recaptcha/api.js", "g-recaptcha",
		"https://www.google.com/recaptcha/ https://www.gstatic.com/recaptcha/ https://recaptcha.google.com/recaptcha/"},
}

// The challenge page: a form without an action, so that it posts back to
// the URL the browser posted its login to (whatever prefix a proxy put in
// front of it), with the handle, the token and, once the solver or the
// widget is done, the solution. It holds nothing of the submission.
var challengeTemplate = template.Must(template.New("challenge").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>One moment…</title>
<style nonce="{{.Nonce}}">body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222}h1{font-size:1.3rem}#tollgate-status{color:#555}</style>
</head>
<body>
<main>
<h1>Checking that this request is not automated</h1>
<form id="tollgate-challenge" method="post" data-tollgate-challenge data-kind="{{.Kind}}"{{if .PoW}} data-token="{{.Token}}" data-difficulty="{{.Difficulty}}"{{end}}>
<input type="hidden" name="tollgate_handle" value="{{.Handle}}">
<input type="hidden" name="tollgate_token" value="{{.Token}}">
{{- if .PoW}}
<input type="hidden" name="tollgate_nonce" value="">
<p id="tollgate-status">Your browser is working on a short puzzle; this takes a second or two and then continues on its own.</p>
{{- else}}
<input type="hidden" name="tollgate_response" value="">
<p id="tollgate-status">Please complete the check below; you will then continue on your own.</p>
<div class="{{.WidgetClass}}" data-sitekey="{{.SiteKey}}" data-callback="tollgateProviderDone"></div>
{{- end}}
</form>
<noscript><p>This check needs JavaScript. Please turn it on and reload the page.</p></noscript>
</main>
{{- if .Script}}
<script nonce="{{.Nonce}}">{{.Script}}</script>
{{- else}}
<script nonce="{{.Nonce}}">window.tollgateProviderDone=function(r){var f=document.getElementById("tollgate-challenge");f.elements.tollgate_response.value=r;f.submit();};</script>
{{- end}}
{{- if .WidgetScript}}
<script nonce="{{.Nonce}}" src="{{.WidgetScript}}" async defer></script>
{{- end}}
</body>
</html>
`))

type challengePageData struct {
	Kind, Token, Handle, SiteKey, Nonce string
	Difficulty                          int
	PoW                                 bool
	Script                              template.JS
	WidgetScript, WidgetClass           string
}

// challengeCSP lets nothing load or run but the page's nonce-carrying
// script and style (and a provider's widget), and the page cannot be
// framed. It has no form-action: browsers apply it to the redirects that
// follow the post, and the login the post resumes may redirect anywhere.
func challengeCSP(nonce string, w widget) string {
	extra, frames := "", ""
	if w.origins != "" {
		extra, frames = " "+w.origins, "; frame-src "+w.origins+"; connect-src "+w.origins
	}
	return "default-src 'none'; script-src 'nonce-" + nonce + "'" + extra +
		"; style-src 'nonce-" + nonce + "'" + extra + frames +
		"; img-src 'self'; base-uri 'none'; frame-ancestors 'none'"
}

// writeChallengePage writes the challenge page of ch for handle: 429, not
// cached, not framed, under a CSP of its own (it replaces the app's).
func writeChallengePage(w http.ResponseWriter, ch Challenge, handle string, solver []byte) error {
	var n [16]byte
	rand.Read(n[:])
	nonce := base64.RawStdEncoding.EncodeToString(n[:])
	d := challengePageData{Kind: ch.Kind, Token: ch.Token, Handle: handle, SiteKey: ch.SiteKey, Nonce: nonce,
		Difficulty: ch.Difficulty, PoW: ch.Kind == ChallengePoW}
	wd := widgets[ch.Kind]
	if d.PoW {
		// tollgate's own script; "</" cannot end the element early.
		d.Script = template.JS(strings.ReplaceAll(string(solver), "</", `<\/`))
	} else {
		d.WidgetScript, d.WidgetClass = wd.script, wd.class
	}
	var buf bytes.Buffer
	if err := challengeTemplate.Execute(&buf, d); err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	h.Set("Content-Security-Policy", challengeCSP(nonce, wd))
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	w.WriteHeader(http.StatusTooManyRequests)
	_, err := w.Write(buf.Bytes())
	return err
}

// pageTemplate is the Guard's default pages: a title and a paragraph.
var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>{{.Title}}</title>
</head>
<body>
<main>
<h1>{{.Title}}</h1>
{{.Body}}
</main>
</body>
</html>
`))

// writePage writes a default page with status; body is trusted HTML.
func writePage(w http.ResponseWriter, status int, title, body string) {
	var buf bytes.Buffer
	pageTemplate.Execute(&buf, struct {
		Title string
		Body  template.HTML
	}{title, template.HTML(body)})
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-store")
	}
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}
