// The request bodies a README shows, and a TypeScript file that assigns each
// to the request type openapi-typescript generated for its route.
//
// A body is the data of a curl call (-d, --data, --data-raw, --json) in a
// ```sh block: its route is the path of the call's URL, its method POST
// unless -X says otherwise. The shell words are read as sh reads them
// (quotes, backslashes, line continuations), and $NAME takes the value of an
// earlier NAME='...' in the README's sh blocks (none: empty), so that a
// body built from a variable is checked as it is sent.

const FENCE = /^```(sh|bash|shell)\s*$/;
const DATA = new Set(["-d", "--data", "--data-raw", "--data-binary", "--json"]);

// bodies returns [{line, method, path, text, json}] for every curl call with
// a body in markdown. A body that is not JSON, or read from a file, is an
// error: README would show a call this check cannot hold to the spec.
export function bodies(markdown) {
  const lines = markdown.split("\n");
  const vars = new Map();
  const out = [];
  for (let i = 0; i < lines.length; i++) {
    if (!FENCE.test(lines[i])) continue;
    const start = i + 1;
    let end = start;
    while (end < lines.length && !lines[end].startsWith("```")) end++;
    const block = lines.slice(start, end).join("\n");
    i = end;
    if (!/\bcurl\b/.test(block)) continue;
    for (const cmd of commands(block, vars)) {
      const call = curlCall(cmd);
      if (call) out.push({ ...call, line: start + 1 + cmd.line });
    }
  }
  return out;
}

// commands splits a block into simple commands, [{words, line}] (line: the
// command's first line, from 0), recording NAME=value assignments in vars.
function commands(src, vars) {
  const cmds = [];
  let words = [];
  let word = null; // null: between words
  let line = 0;
  let cmdLine = 0;
  const flush = () => {
    if (word !== null) words.push(word);
    word = null;
  };
  const end = () => {
    flush();
    if (words.length > 0) {
      const assign = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(words[0]);
      if (assign && words.length === 1) vars.set(assign[1], assign[2]);
      else if (assign) vars.delete(assign[1]); // NAME=$(…) and the like
      cmds.push({ words, line: cmdLine });
    }
    words = [];
  };
  const expand = (j) => {
    // $NAME or ${NAME} at src[j] ('$'); returns [value, next index].
    const m = /^\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))/.exec(src.slice(j));
    if (!m) return ["$", j + 1];
    return [vars.get(m[1] ?? m[2]) ?? "", j + m[0].length];
  };
  for (let j = 0; j < src.length; ) {
    const c = src[j];
    if (words.length === 0 && word === null) cmdLine = line;
    if (c === "\\" && src[j + 1] === "\n") { j += 2; line++; continue; }
    if (c === "\n" || c === ";" || c === "|" || c === "&" || c === "(" || c === ")") {
      if (c === "\n") line++;
      end();
      j++;
      continue;
    }
    if (c === " " || c === "\t") { flush(); j++; continue; }
    if (c === "#" && word === null) {
      while (j < src.length && src[j] !== "\n") j++;
      continue;
    }
    word ??= "";
    if (c === "'") {
      const k = src.indexOf("'", j + 1);
      if (k < 0) throw new Error(`unterminated ' in sh block: ${src.slice(j, j + 40)}`);
      const text = src.slice(j + 1, k);
      line += text.split("\n").length - 1;
      word += text;
      j = k + 1;
    } else if (c === '"') {
      j++;
      while (j < src.length && src[j] !== '"') {
        if (src[j] === "\\" && '"\\$`'.includes(src[j + 1])) { word += src[j + 1]; j += 2; }
        else if (src[j] === "$" && src[j + 1] === "(") throw new Error('$( inside "…" in an sh block is not read');
        else if (src[j] === "$") { const [v, k] = expand(j); word += v; j = k; }
        else { if (src[j] === "\n") line++; word += src[j++]; }
      }
      if (j >= src.length) throw new Error('unterminated " in sh block');
      j++;
    } else if (c === "\\") {
      word += src[j + 1] ?? "";
      j += 2;
    } else if (c === "$" && src[j + 1] === "(") {
      end(); // a command substitution: its command is a command of its own
      j += 2;
    } else if (c === "$") {
      const [v, k] = expand(j);
      word += v;
      j = k;
    } else {
      word += c;
      j++;
    }
  }
  end();
  return cmds;
}

// curlCall returns {method, path, text, json} for a curl command with a body.
function curlCall({ words }) {
  const at = words.indexOf("curl");
  if (at < 0) return null;
  let method = null;
  let url = null;
  let text = null;
  for (let k = at + 1; k < words.length; k++) {
    const w = words[k];
    if (DATA.has(w)) {
      text = words[++k];
      if (w === "--json") method ??= "POST";
    } else if (w === "-X" || w === "--request") method = words[++k];
    else if (["-H", "--header", "-o", "-u", "-w", "--max-time", "-m"].includes(w)) k++;
    else if (!w.startsWith("-") && url === null) url = w;
  }
  if (text === null) return null;
  if (text.startsWith("@")) throw new Error(`curl ${url}: a body read from a file (${text}) is not checked`);
  const path = /\/[^?#\s]*/.exec(url?.replace(/^[a-z]+:\/\/[^/]*/, "") ?? "")?.[0];
  if (!path) throw new Error(`curl with a body but no URL path: ${words.join(" ")}`);
  let json;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Error(`curl ${path}: the body is not JSON (${err.message}): ${text}`);
  }
  return { method: (method ?? "POST").toLowerCase(), path, text, json };
}

// typescript returns a module that assigns each body to its route's
// generated request type; tsc --strict fails on a body the spec rejects.
export function typescript(found, { source = "README.md", types = "./openapi" } = {}) {
  const out = [
    `// Generated from ${source} by test/readme.mjs; do not edit.`,
    `import type { paths } from "${types}";`,
    "",
  ];
  found.forEach((b, n) => {
    out.push(
      `// ${b.file ?? source}:${b.line}: ${b.method.toUpperCase()} ${b.path}`,
      `export const body${n + 1}: paths[${JSON.stringify(b.path)}][${JSON.stringify(b.method)}]["requestBody"]["content"]["application/json"] =`,
      `  ${JSON.stringify(b.json, null, 2).replaceAll("\n", "\n  ")};`,
      "",
    );
  });
  return out.join("\n");
}
