// The demo's pages: the same HTML as examples/demo-login's template
// (demo/templates/page.html), written out here with every value escaped.

import type { User } from "./users.js";

/** An "SMS" the demo would have sent; the page shows it in its phone panel. */
export interface SMS {
  at: Date;
  to: string;
  code: string;
}

/** What a page shows. */
export interface Page {
  page: "login" | "otp" | "home" | "error" | "stepup";
  title: string;
  message?: string;
  /** message is a warning */
  alert?: boolean;
  /** the login page's demo accounts */
  users?: readonly User[];
  /** the code step's form that shows the CAPTCHA stand-in: send or verify (the password step gets tollgate's challenge instead) */
  captchaFor?: "send" | "verify";
  user?: string;
  phoneEnd?: string;
  sms?: readonly SMS[];
  /** the step-up page's form, trusted HTML from @tollgate/client/express */
  form?: string;
}

const escapes: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&#34;",
  "'": "&#39;",
};

/** esc escapes s for HTML text and quoted attribute values. */
export function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => escapes[c] ?? c);
}

const captchaBox = `<fieldset class="captcha" id="captcha-box">
  <legend>CAPTCHA stand-in</legend>
  <label><input id="captcha" type="checkbox" name="captcha" value="yes" required> I am not a robot</label>
  <p class="note">This is not a real CAPTCHA: tick the box. A real site shows its CAPTCHA provider's widget here and has the provider confirm the answer before it tells tollgate that a CAPTCHA was solved.</p>
</fieldset>`;

function captchaFor(p: Page, form: Page["captchaFor"]): string {
  return p.captchaFor === form ? captchaBox : "";
}

/** clock is a time of day as HH:MM:SS, local time. */
function clock(d: Date): string {
  const two = (n: number) => String(n).padStart(2, "0");
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

function loginBody(p: Page): string {
  const users = (p.users ?? [])
    .map((u) => `<li><code>${esc(u.name)}</code> / <code>${esc(u.password)}</code></li>`)
    .join("");
  return `<form method="post" action="/login">
  <label for="username">Username</label>
  <input id="username" name="username" autocomplete="username" required>
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="current-password" required>
  <button id="signin" type="submit">Sign in</button>
</form>
<aside class="demo" id="demo-accounts">
  <h2>Demo accounts</h2>
  <p>This demo has two accounts; any other name is an unknown account, which gets the same answers as a wrong password.</p>
  <ul>${users}</ul>
</aside>`;
}

function otpBody(p: Page): string {
  const sms = p.sms ?? [];
  const log =
    sms.length > 0
      ? `<ol id="sms-log">${sms
          .map(
            (m) =>
              `<li>${clock(m.at)} to ${esc(m.to)}: Your tollgate demo code is <span class="sms-code">${esc(m.code)}</span>. It expires in 5 minutes.</li>`,
          )
          .join("")}</ol>`
      : `<p id="sms-empty">No message yet.</p>`;
  return `<p>Password accepted. Second step: we send a one-time code by SMS to the phone ending in <strong>${esc(p.phoneEnd ?? "")}</strong>.</p>
<form method="post" action="/otp/send">
  ${captchaFor(p, "send")}
  <button id="send-code" type="submit">Send code</button>
</form>
<form method="post" action="/otp/verify">
  <label for="code">Code</label>
  <input id="code" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required>
  ${captchaFor(p, "verify")}
  <button id="verify" type="submit">Verify</button>
</form>
<aside class="demo" id="sms-panel">
  <h2>Demo phone: SMS log</h2>
  <p>Not a real SMS: the messages this demo would send to ${esc(p.user ?? "")}'s phone are written here instead.</p>
  ${log}
</aside>`;
}

function homeBody(p: Page): string {
  const user = esc(p.user ?? "");
  return `<p id="signed-in">Signed in as <strong>${user}</strong>.</p>
<p>This browser now holds tollgate's device cookie. Its next sign-ins go ahead at once, even while someone else hammers ${user}'s account or this address with wrong passwords.</p>
<form method="post" action="/logout"><button id="signout" type="submit">Sign out</button></form>`;
}

/** renderPage is the whole HTML document of p. */
export function renderPage(p: Page): string {
  const message = p.message
    ? `<p id="message" class="message${p.alert ? " alert" : ""}" role="status">${esc(p.message)}</p>`
    : "";
  let body = "";
  switch (p.page) {
    case "login":
      body = loginBody(p);
      break;
    case "otp":
      body = otpBody(p);
      break;
    case "home":
      body = homeBody(p);
      break;
    case "stepup":
      body = `<p>This password appears in a list of leaked passwords, or this account is under attack: to finish signing in, enter the code we just sent you. Then change your password.</p>\n${p.form ?? ""}`;
      break;
    case "error":
      break;
  }
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(p.title)} · tollgate demo</title>
<link rel="stylesheet" href="/style.css">
</head>
<body>
<header>
  <strong>tollgate demo</strong> · a login protected by tollgate
  <span class="badge">Demo app: the accounts, the CAPTCHA and the SMS are stand-ins</span>
</header>
<main id="page-${p.page}">
<h1>${esc(p.title)}</h1>
${message}
${body}
</main>
</body>
</html>
`;
}

// The messages end users see. The login's are the same for an unknown
// account and a wrong password.
export const msgWrong = "Wrong username or password.";
export const msgCheckUnavailable = "Signing in from here needs a check that cannot be shown right now. Please try again later.";
export const msgCodeCaptcha = "Please show you are a person: tick the box and try again.";
export const msgOnItsWay = "If this number can receive codes, one is on its way.";
export const msgBadCode = "That code is not right, or it has expired.";
export const msgUnavailable = "Signing in is not possible right now. Please try again in a moment.";

function plural(n: number, unit: string): string {
  return n === 1 ? `1 ${unit}` : `${n} ${unit}s`;
}

/** tooManyAttempts is the delay page's message. */
export function tooManyAttempts(seconds: number): string {
  return `Too many attempts, try again in ${plural(seconds, "second")}.`;
}

/** resendWait is the message of a code asked for too soon. */
export function resendWait(seconds: number): string {
  return `A code was sent a moment ago. You can ask for another in ${plural(seconds, "second")}.`;
}
