/**
 * Test helpers: where the repository and its vectors are, stand-in HTTP
 * servers on 127.0.0.1, a closed port, and a real tollgate process.
 */

import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

/** The package directory (clients/typescript), found from this file whether run from test/ or dist-test/test/. */
export const packageDir: string = (() => {
  let d = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    if (existsSync(join(d, "package.json")) && existsSync(join(d, "src"))) return d;
    d = dirname(d);
  }
  throw new Error("the package directory was not found");
})();

/** The repository root: the directory up from the package whose go.mod is tollgate's module. */
export const repoRoot: string = (() => {
  let d = packageDir;
  for (let i = 0; i < 6; i++) {
    const mod = join(d, "go.mod");
    if (existsSync(mod) && /^module github\.com\/tollgate-auth\/tollgate\s*$/m.test(readFileSync(mod, "utf8"))) return d;
    d = dirname(d);
  }
  throw new Error("the repository root (tollgate's go.mod) was not found above " + packageDir);
})();

/** clients/testdata. */
export const vectorsDir = join(repoRoot, "clients", "testdata");

/** A stand-in server: its base URL, the requests it got, and close. */
export interface StandIn {
  base: string;
  requests: Array<{ method: string; path: string; contentType: string; headers: IncomingMessage["headers"]; body: string }>;
  close(): Promise<void>;
}

/** Starts a node:http server on 127.0.0.1 and a free port with handler; it records each request (and its body) first. */
export async function standIn(handler: (req: IncomingMessage, res: ServerResponse, body: string) => void): Promise<StandIn> {
  const requests: StandIn["requests"] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      requests.push({
        method: req.method ?? "",
        path: req.url ?? "",
        contentType: String(req.headers["content-type"] ?? ""),
        headers: req.headers,
        body,
      });
      handler(req, res, body);
    });
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}

/** A base URL on 127.0.0.1 where nothing listens: a port the kernel gave and that was closed again. */
export async function closedPort(): Promise<string> {
  const server = createServer();
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((ok) => server.close(() => ok()));
  return `http://127.0.0.1:${port}`;
}

/** A running tollgate: its base URL, its log lines, and stop. */
export interface Tollgate {
  base: string;
  logs: string[];
  stop(): Promise<void>;
}

/**
 * The tollgate binary: $TOLLGATE_BIN, or one built now with
 * `go build -o <tmpdir>/tollgate ./cmd/tollgate` in the repository root
 * (the directory is removed by cleanup()).
 */
export function tollgateBinary(): { path: string; cleanup: () => void } {
  const env = process.env["TOLLGATE_BIN"];
  if (env !== undefined && env !== "") return { path: resolve(env), cleanup: () => undefined };
  const dir = mkdtempSync(join(tmpdir(), "tollgate-ts-"));
  const path = join(dir, "tollgate");
  execFileSync("go", ["build", "-o", path, "./cmd/tollgate"], { cwd: repoRoot, stdio: ["ignore", "inherit", "inherit"], timeout: 600_000 });
  return { path, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Starts `<bin> serve` with TOLLGATE_LISTEN=127.0.0.1:0 and no
 * TOLLGATE_CONFIG or TOLLGATE_REDIS_* (extra sets TOLLGATE_ variables of
 * its own, such as TOLLGATE_CONFIG), and waits (at most 60 s) for the JSON
 * log line "listening" with its addr. stop() kills it by its PID.
 */
export async function startTollgate(bin: string, extra: Record<string, string> = {}): Promise<Tollgate> {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith("TOLLGATE_")) continue;
    env[k] = v;
  }
  env["TOLLGATE_LISTEN"] = "127.0.0.1:0";
  Object.assign(env, extra);
  const child: ChildProcess = spawn(bin, ["serve"], { env, stdio: ["ignore", "ignore", "pipe"] });
  const logs: string[] = [];
  let exited = false;
  const exit = new Promise<void>((ok) => child.once("exit", () => ((exited = true), ok())));
  const stop = async (): Promise<void> => {
    if (!exited && child.pid !== undefined) process.kill(child.pid, "SIGKILL");
    await exit;
  };
  const addr = await new Promise<string>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error("tollgate did not start in 60 s:\n" + logs.join("\n"))), 60_000);
    child.once("error", (e) => (clearTimeout(timer), fail(e)));
    child.once("exit", (code) => (clearTimeout(timer), fail(new Error(`tollgate exited at start (${code}):\n${logs.join("\n")}`))));
    const rl = createInterface({ input: child.stderr as NodeJS.ReadableStream });
    rl.on("line", (line) => {
      logs.push(line);
      try {
        const m = JSON.parse(line) as { msg?: unknown; addr?: unknown };
        if (m.msg === "listening" && typeof m.addr === "string") {
          clearTimeout(timer);
          ok(m.addr);
        }
      } catch {
        // not a JSON line
      }
    });
  }).catch(async (e: unknown) => {
    await stop();
    throw e;
  });
  return { base: `http://${addr}`, logs, stop };
}
