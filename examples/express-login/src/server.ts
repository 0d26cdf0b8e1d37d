// The Express demo login's entry point: configuration from the
// environment, then it serves until SIGINT or SIGTERM.
//
//   TOLLGATE_URL          tollgate's base URL (default http://127.0.0.1:8080)
//   TOLLGATE_TOKEN        bearer token for a tollgate with auth configured
//   LISTEN                loopback host:port (default 127.0.0.1:8082; port 0
//                         picks a free one)
//   TRUSTED_PROXIES       comma-separated prefixes of the reverse proxies whose
//                         X-Forwarded-For is read (default: none, the client is
//                         the connection's peer)
//   DEMO_HASH_ITERATIONS  PBKDF2 iterations of the demo's password hashes
//                         (default 600000; tests lower it)
//   STEP_UP_CODES_FILE    where the demo's sender appends each step-up code,
//                         one JSON line {"user":...,"code":...} (default:
//                         a line on stderr); the tests read it
//
// Once it listens it prints one line to stdout:
//
//   listening http://127.0.0.1:PORT

import { appendFileSync } from "node:fs";
import { BlockList, isIP, type AddressInfo } from "node:net";
import { Client, Proxies } from "@tollgate/client";
import { createApp } from "./app.js";
import { defaultHashIterations } from "./users.js";

function fail(message: string, code: number): never {
  process.stderr.write(`express-login: ${message}\n`);
  process.exit(code);
}

/** parseListen splits a loopback host:port; the demo listens on loopback only. */
function parseListen(addr: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(addr);
  const host = m?.[1] ?? m?.[2] ?? "";
  const port = Number(m?.[3]);
  const loopback = new BlockList();
  loopback.addSubnet("127.0.0.0", 8, "ipv4");
  loopback.addAddress("::1", "ipv6");
  const family = isIP(host);
  if (m === null || family === 0 || !loopback.check(host, family === 6 ? "ipv6" : "ipv4") || !(port >= 0 && port <= 65535)) {
    throw new Error(`${JSON.stringify(addr)} is not a loopback address and port such as 127.0.0.1:8082`);
  }
  return { host, port };
}

async function main(): Promise<void> {
  const env = process.env;
  let listen: { host: string; port: number };
  try {
    listen = parseListen(env["LISTEN"] || "127.0.0.1:8082");
  } catch (err) {
    fail(`LISTEN: ${(err as Error).message}`, 2);
  }
  const tollgateURL = env["TOLLGATE_URL"] || "http://127.0.0.1:8080";
  const iterations = Number(env["DEMO_HASH_ITERATIONS"] || defaultHashIterations);
  if (!Number.isSafeInteger(iterations) || iterations < 1) {
    fail(`DEMO_HASH_ITERATIONS: ${JSON.stringify(env["DEMO_HASH_ITERATIONS"])} is not a positive integer`, 2);
  }

  let tollgate: Client;
  try {
    tollgate = new Client({
      baseURL: tollgateURL,
      ...(env["TOLLGATE_TOKEN"] ? { token: env["TOLLGATE_TOKEN"] } : {}),
      userAgent: "tollgate-express-login-demo/1",
    });
  } catch (err) {
    fail(`TOLLGATE_URL: ${(err as Error).message}`, 2);
  }

  // No proxy is trusted unless TRUSTED_PROXIES names some: then the client
  // address is read from their X-Forwarded-For. Trusting loopback (as the
  // test does, to play many addresses from one machine) lets any program
  // on the machine choose its own address: a demo setting only.
  const trusted = (env["TRUSTED_PROXIES"] ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "");
  let proxies: Proxies;
  try {
    proxies = new Proxies(trusted.length > 0 ? { trusted, header: "x-forwarded-for" } : { trusted: [], header: "none" });
  } catch (err) {
    fail(`TRUSTED_PROXIES: ${(err as Error).message}`, 2);
  }

  // The demo's sender of step-up codes: a real login mails or texts them.
  const codesFile = env["STEP_UP_CODES_FILE"] ?? "";
  const app = await createApp({
    tollgate, proxies, hashIterations: iterations,
    warn: (line) => process.stderr.write(line + "\n"),
    ...(codesFile !== ""
      ? { sendStepUpCode: (user: string, code: string) => appendFileSync(codesFile, JSON.stringify({ user, code }) + "\n", { mode: 0o600 }) }
      : {}),
  });
  const server = app.listen(listen.port, listen.host);
  server.headersTimeout = 5_000;
  server.requestTimeout = 30_000;
  server.on("error", (err) => fail(String(err), 1));
  server.on("listening", () => {
    const a = server.address() as AddressInfo;
    const host = a.family === "IPv6" ? `[${a.address}]` : a.address;
    process.stdout.write(`listening http://${host}:${a.port}\n`);
    process.stderr.write(
      `express-login: open http://${host}:${a.port}/login (tollgate at ${tollgateURL}; ` +
        `${trusted.length > 0 ? `X-Forwarded-For read from ${trusted.join(", ")}` : "no proxy trusted"})\n`,
    );
  });

  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    server.close(() => process.exit(0));
    server.closeIdleConnections();
    // Requests still running after 5 s are cut.
    setTimeout(() => {
      server.closeAllConnections();
      process.exit(0);
    }, 5_000).unref();
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}

main().catch((err: unknown) => fail(String(err), 1));
