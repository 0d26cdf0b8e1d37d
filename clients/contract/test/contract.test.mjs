// npm run types: generate TypeScript types from openapi.yaml with
// openapi-typescript, and compile every request body README.md and docs/*.md
// show against them with tsc --strict, with test/controls.ts.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import { bodies, typescript } from "./readme.mjs";

const here = join(dirname(fileURLToPath(import.meta.url)), "..");
const repo = join(here, "..", "..");
const spec = join(repo, "openapi.yaml");
// The docs whose curl calls are checked: the README and every file of docs/.
const docs = ["README.md", ...readdirSync(join(repo, "docs")).filter((f) => f.endsWith(".md")).sort().map((f) => `docs/${f}`)];
const generated = join(here, "generated");
const bin = (name) => join(here, "node_modules", ".bin", name);

function run(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: here, encoding: "utf8" });
  return { ok: r.status === 0, out: `${r.stdout}${r.stderr}${r.error ?? ""}` };
}

function tsc(project) {
  return run(bin("tsc"), ["-p", project, "--pretty", "false"]);
}

// failing returns the bodies of ts (typescript()'s output, written to file)
// that tsc's output has errors in: bodyN runs from its export to the next.
function failing(ts, file, out, calls) {
  const starts = ts.split("\n").flatMap((l, i) => (/^export const body\d/.test(l) ? [i + 1] : []));
  const lines = [...out.matchAll(new RegExp(`${file.replace(".", "\\.")}\\((\\d+),`, "g"))].map((m) => Number(m[1]));
  return [...new Set(lines.map((l) => starts.findLastIndex((s) => s <= l)))].sort((a, b) => a - b).map((i) => calls[i]);
}

rmSync(generated, { recursive: true, force: true });
mkdirSync(generated);

test("openapi-typescript generates types from openapi.yaml", () => {
  const r = run(bin("openapi-typescript"), [spec, "-o", join(generated, "openapi.ts")]);
  assert.ok(r.ok, r.out);
});

// Each body with the doc it is in (b.file), its line that doc's.
const found = docs.flatMap((file) => bodies(readFileSync(join(repo, file), "utf8")).map((b) => ({ ...b, file })));

test("the docs' bodies go to POST routes of openapi.yaml that take a JSON body", () => {
  assert.ok(found.length >= 10, `${found.length} curl calls with a body found in README.md and docs/*.md; the pattern no longer matches`);
  const paths = parse(readFileSync(spec, "utf8")).paths;
  for (const b of found) {
    const op = paths[b.path]?.[b.method];
    assert.ok(op?.requestBody?.content?.["application/json"], `${b.file}:${b.line}: ${b.method.toUpperCase()} ${b.path} takes no JSON body in openapi.yaml`);
  }
  console.log(`${found.length} bodies: ${found.map((b) => `${b.path} (${b.file}:${b.line})`).join(", ")}`);
});

// Every property of every JSON request body: optional in the generated type
// exactly when openapi.yaml does not list it as required (a `default:` once
// made generators require captcha_solved).
function optionality(doc) {
  const out = ['import type { paths } from "./openapi";', ""];
  const deref = (s) => (s?.$ref ? deref(doc.components.schemas[s.$ref.split("/").pop()]) : s);
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const schema = deref(op?.requestBody?.content?.["application/json"]?.schema);
      if (!schema?.properties) continue;
      const type = `paths[${JSON.stringify(path)}][${JSON.stringify(method)}]["requestBody"]["content"]["application/json"]`;
      for (const prop of Object.keys(schema.properties)) {
        const required = (schema.required ?? []).includes(prop);
        const name = `${op.operationId}_${prop}_${required ? "required" : "optional"}`;
        out.push(`export const ${name}: {} extends Pick<${type}, ${JSON.stringify(prop)}> ? ${!required} : ${required} = true;`);
      }
    }
  }
  out.push("");
  return out.join("\n");
}

test("tsc --strict compiles the docs' bodies, the optional fields and the controls", () => {
  const ts = typescript(found);
  writeFileSync(join(generated, "readme-bodies.ts"), ts);
  writeFileSync(join(generated, "optional-fields.ts"), optionality(parse(readFileSync(spec, "utf8"))));
  const r = tsc("tsconfig.json");
  const bad = failing(ts, "readme-bodies.ts", r.out, found).map((b) => `${b.file}:${b.line} (${b.path})`);
  assert.ok(r.ok, `tsc failed${bad.length ? `; openapi.yaml rejects the bodies at ${bad.join(", ")}` : ""}:\n${r.out}`);
});

test("the check fails on bodies the spec rejects", () => {
  // A README of wrong calls, compiled as the real one is: each must fail.
  const bad = [
    "```sh",
    `curl -s $T/v1/check -H 'Content-Type: application/json' -d '{"flow":"login","acount":"alice@example.com"}'`,
    `curl -s $T/v1/check -d '{"flow":"login","captcha_solved":"yes"}'`,
    `curl -s $T/v1/report -d '{"flow":"login","account":"alice@example.com"}'`,
    `curl -s $T/v1/otp/send -d '{"destination":"+44 7400 123456","channel":"pigeon"}'`,
    `curl -s $T/v1/nope -d '{}'`,
    "```",
  ].join("\n");
  const calls = bodies(bad);
  assert.equal(calls.length, 5);
  const dir = join(generated, "negative");
  mkdirSync(dir, { recursive: true });
  const ts = typescript(calls, { source: "negative", types: "../openapi" });
  writeFileSync(join(dir, "bodies.ts"), ts);
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({ extends: "../../tsconfig.json", include: ["bodies.ts"] }));
  const r = tsc(join(dir, "tsconfig.json"));
  assert.ok(!r.ok, "tsc accepted bodies the spec rejects");
  assert.deepEqual(failing(ts, "bodies.ts", r.out, calls), calls, `each wrong body fails on its own:\n${r.out}`);
});

test("README's shell is read as sh reads it", () => {
  const md = [
    "```sh",
    "T=http://127.0.0.1:8080",
    `ALICE='"flow":"login","account":"alice@example.com"'`,
    `X=$(curl -s $T/v1/check -d "{$ALICE}" | sed -E 's/"(a)"/\\1/')  # a comment, don't`,
    `curl -s $T/v1/report -H 'Content-Type: application/json' \\`,
    `  -d "{$ALICE,\\"outcome\\":\\"failure\\",\\"attempt\\":\\"$X\\"}"`,
    `curl -s $URL/v1/report -d '{"flow":"login",`,
    `     "outcome":"success"}'`,
    "```",
  ].join("\n");
  assert.deepEqual(
    bodies(md).map(({ line, method, path, json }) => ({ line, method, path, json })),
    [
      { line: 4, method: "post", path: "/v1/check", json: { flow: "login", account: "alice@example.com" } },
      { line: 5, method: "post", path: "/v1/report", json: { flow: "login", account: "alice@example.com", outcome: "failure", attempt: "" } },
      { line: 7, method: "post", path: "/v1/report", json: { flow: "login", outcome: "success" } },
    ],
  );
  assert.throws(() => bodies("```sh\ncurl $T/v1/check -d '{flow: login}'\n```"), /not JSON/);
});
