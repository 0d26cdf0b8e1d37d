/**
 * What the demo's tests share: starting a real tollgate ($TOLLGATE_BIN, or
 * one built with go build) and the demo (node dist/server.js) on free
 * loopback ports, killed by their PIDs at the end.
 */

import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

/** examples/express-login, from dist-test/test/. */
export const appDir = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const repoRoot = resolve(appDir, "..", "..");

/** The processes one test file started. */
export class Processes {
  readonly #children: ChildProcess[] = [];
  #binDir = "";
  /** Where the demo's sender writes the step-up codes (STEP_UP_CODES_FILE). */
  readonly #dir = mkdtempSync(join(tmpdir(), "express-login-codes-"));
  readonly codesFile = join(this.#dir, "codes.jsonl");

  /** The step-up codes the demo's sender wrote, oldest first. */
  sentCodes(): Array<{ user: string; code: string }> {
    if (!existsSync(this.codesFile)) return [];
    return readFileSync(this.codesFile, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as { user: string; code: string });
  }

  /** Starts cmd and resolves with the first match of re in a line of the stream it writes to (stdout, or stderr). */
  start(cmd: string, args: string[], env: NodeJS.ProcessEnv, fromStderr: boolean, re: RegExp, cwd?: string): Promise<string> {
    const child = spawn(cmd, args, { env, cwd, stdio: ["ignore", fromStderr ? "ignore" : "pipe", fromStderr ? "pipe" : "inherit"] });
    this.#children.push(child);
    const lines: string[] = [];
    return new Promise<string>((ok, fail) => {
      const timer = setTimeout(() => fail(new Error(`${cmd} did not start in 60 s:\n${lines.join("\n")}`)), 60_000);
      child.once("exit", (code) => (clearTimeout(timer), fail(new Error(`${cmd} exited at start (${code}):\n${lines.join("\n")}`))));
      createInterface({ input: (fromStderr ? child.stderr : child.stdout) as NodeJS.ReadableStream }).on("line", (line) => {
        lines.push(line);
        const m = re.exec(line);
        if (m !== null) {
          clearTimeout(timer);
          ok(m[1] as string);
        }
      });
    });
  }

  /** Starts tollgate (extra: more TOLLGATE_ variables) and the demo in front of it; the demo's base URL. */
  async startDemo(extraTollgate: NodeJS.ProcessEnv = {}, extraApp: NodeJS.ProcessEnv = {}): Promise<string> {
    let bin = process.env["TOLLGATE_BIN"] ?? "";
    if (bin === "") {
      this.#binDir = mkdtempSync(join(tmpdir(), "express-login-test-"));
      bin = join(this.#binDir, "tollgate");
      execFileSync("go", ["build", "-o", bin, "./cmd/tollgate"], { cwd: repoRoot, stdio: "inherit", timeout: 600_000 });
    }
    const env: NodeJS.ProcessEnv = {
      PATH: process.env["PATH"], TOLLGATE_LISTEN: "127.0.0.1:0", TOLLGATE_SECRET: "express-login-test-secret-of-32-bytes!", ...extraTollgate,
    };
    const addr = await this.start(resolve(bin), ["serve"], env, true, /"msg":"listening".*"addr":"([^"]+)"/);
    return this.start("node", ["dist/server.js"], {
      PATH: process.env["PATH"], HOME: tmpdir(), TOLLGATE_URL: `http://${addr}`, LISTEN: "127.0.0.1:0",
      TRUSTED_PROXIES: "127.0.0.0/8,::1/128", DEMO_HASH_ITERATIONS: "1000", STEP_UP_CODES_FILE: this.codesFile, ...extraApp,
    }, false, /^listening (http:\/\/127\.0\.0\.1:\d+)$/, appDir);
  }

  /** Kills what it started, by PID, and removes the tollgate it built. */
  stop(): void {
    for (const c of this.#children) if (c.pid !== undefined && c.exitCode === null) process.kill(c.pid, "SIGKILL");
    if (this.#binDir !== "") rmSync(this.#binDir, { recursive: true, force: true });
    rmSync(this.#dir, { recursive: true, force: true });
  }
}
