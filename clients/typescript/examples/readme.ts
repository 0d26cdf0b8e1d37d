import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { Client, DeviceCookie, Proxies, Responder, failDelay, writeAnswer } from "@tollgate/client";

const tollgate = new Client({ baseURL: process.env["TOLLGATE_URL"] ?? "http://127.0.0.1:8080" });
const proxies = new Proxies({ trusted: ["127.0.0.0/8"], header: "x-forwarded-for" }); // your proxies
const responder = new Responder(); // 429 + Retry-After + RateLimit; a CAPTCHA hook if you set one
const cookie = new DeviceCookie(); // __Host-tollgate-device

/** Your own password check; unknown users fail exactly like wrong passwords. */
async function checkPassword(user: string, password: string): Promise<boolean> {
  return user === "alice" && password === "correct horse";
}

/** POST /login with a form body user=…&password=… */
export async function login(req: IncomingMessage, res: ServerResponse, form: URLSearchParams): Promise<void> {
  const account = form.get("user") ?? "";
  const ip = proxies.clientIP(req);
  const device_token = cookie.fromRequest(req);
  const v = await tollgate.check({ flow: "login", account, ip, device_token }, failDelay); // never rejects; log v.error
  const answer = responder.respond(v);
  if (!answer.proceed) return writeAnswer(res, answer); // delayed or challenged: the same for every account
  if (answer.holdMs > 0) await sleep(answer.holdMs); // a queued proceed

  const ok = await checkPassword(account, form.get("password") ?? "");
  const outcome = ok ? "success" : "failure";
  const next = await tollgate.report({ flow: "login", account, ip, device_token, attempt: v.attempt, outcome }, failDelay);
  if (!ok) {
    res.writeHead(401, { "content-type": "text/plain" }).end("wrong user or password");
    return;
  }
  cookie.set(res, next.device_token); // this device skips the IP rules next time
  res.writeHead(303, { location: "/" }).end(); // ... and start the session
}

export const server = createServer(async (req, res) => {
  if (req.method !== "POST" || req.url !== "/login") return void res.writeHead(404).end();
  let body = "";
  for await (const chunk of req) if ((body += chunk).length > 4096) return void res.writeHead(413).end();
  await login(req, res, new URLSearchParams(body));
});

if (process.argv[1] === fileURLToPath(import.meta.url)) server.listen(8081, "127.0.0.1");
