/**
 * Small pieces of Go's net/http, mime and net/url that the client must
 * match: status texts, media-type parsing, query escaping, and reading an
 * answer's body up to a cap.
 *
 * @packageDocumentation
 */

/** Go's http.StatusText: the text of each status code it knows. */
const statusTexts: Readonly<Record<number, string>> = {
  100: "Continue",
  101: "Switching Protocols",
  102: "Processing",
  103: "Early Hints",
  200: "OK",
  201: "Created",
  202: "Accepted",
  203: "Non-Authoritative Information",
  204: "No Content",
  205: "Reset Content",
  206: "Partial Content",
  207: "Multi-Status",
  208: "Already Reported",
  226: "IM Used",
  300: "Multiple Choices",
  301: "Moved Permanently",
  302: "Found",
  303: "See Other",
  304: "Not Modified",
  305: "Use Proxy",
  307: "Temporary Redirect",
  308: "Permanent Redirect",
  400: "Bad Request",
  401: "Unauthorized",
  402: "Payment Required",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  406: "Not Acceptable",
  407: "Proxy Authentication Required",
  408: "Request Timeout",
  409: "Conflict",
  410: "Gone",
  411: "Length Required",
  412: "Precondition Failed",
  413: "Request Entity Too Large",
  414: "Request URI Too Long",
  415: "Unsupported Media Type",
  416: "Requested Range Not Satisfiable",
  417: "Expectation Failed",
  418: "I'm a teapot",
  421: "Misdirected Request",
  422: "Unprocessable Entity",
  423: "Locked",
  424: "Failed Dependency",
  425: "Too Early",
  426: "Upgrade Required",
  428: "Precondition Required",
  429: "Too Many Requests",
  431: "Request Header Fields Too Large",
  451: "Unavailable For Legal Reasons",
  500: "Internal Server Error",
  501: "Not Implemented",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
  505: "HTTP Version Not Supported",
  506: "Variant Also Negotiates",
  507: "Insufficient Storage",
  508: "Loop Detected",
  510: "Not Extended",
  511: "Network Authentication Required",
};

/** The status text Go's http.StatusText gives code, or "" for one it does not know. */
export function statusText(code: number): string {
  return statusTexts[code] ?? "";
}

/** Whether c is a MIME token character (RFC 2045: CHAR except SPACE, CTLs and tspecials). */
function isMimeTokenChar(c: string): boolean {
  const n = c.charCodeAt(0);
  return n > 0x20 && n < 0x7f && !'()<>@,;:\\"/[]?='.includes(c);
}

/** Whether c is an RFC 2045 tspecial. */
function isTSpecial(c: string): boolean {
  return c.length === 1 && '()<>@,;:\\"/[]?='.includes(c);
}

/** Go's unicode.IsSpace, for one UTF-16 code unit. */
function isGoSpace(c: string): boolean {
  return /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]$/.test(c);
}

/** s without leading Go white space. */
function trimLeftSpace(s: string): string {
  let i = 0;
  while (i < s.length && isGoSpace(s.charAt(i))) i++;
  return s.slice(i);
}

/** s without Go white space at either end. */
function trimSpace(s: string): string {
  let e = s.length;
  while (e > 0 && isGoSpace(s.charAt(e - 1))) e--;
  return trimLeftSpace(s.slice(0, e));
}

/** mime's consumeToken: the leading token of v and the rest. */
function consumeToken(v: string): [string, string] {
  let i = 0;
  while (i < v.length && isMimeTokenChar(v.charAt(i))) i++;
  return [v.slice(0, i), v.slice(i)];
}

/** mime's consumeValue: a token or a quoted-string, and the rest; ["", v] when neither. */
function consumeValue(v: string): [string, string] {
  if (v === "") return ["", ""];
  if (v[0] !== '"') return consumeToken(v);
  let out = "";
  for (let i = 1; i < v.length; i++) {
    const r = v.charAt(i);
    if (r === '"') return [out, v.slice(i + 1)];
    if (r === "\\" && i + 1 < v.length && isTSpecial(v.charAt(i + 1))) {
      out += v.charAt(i + 1);
      i++;
      continue;
    }
    if (r === "\r" || r === "\n") return ["", v];
    out += r;
  }
  return ["", v];
}

/** mime's consumeMediaParam: one `; name=value`, or ["", "", v]. */
function consumeMediaParam(v: string): [string, string, string] {
  let rest = trimLeftSpace(v);
  if (!rest.startsWith(";")) return ["", "", v];
  rest = trimLeftSpace(rest.slice(1));
  let param: string;
  [param, rest] = consumeToken(rest);
  param = param.toLowerCase();
  if (param === "") return ["", "", v];
  rest = trimLeftSpace(rest);
  if (!rest.startsWith("=")) return ["", "", v];
  rest = trimLeftSpace(rest.slice(1));
  const [value, rest2] = consumeValue(rest);
  if (value === "" && rest2 === rest) return ["", "", v];
  return [param, value, rest2];
}

/**
 * The media type of a Content-Type value, lower-cased, as Go's
 * mime.ParseMediaType gives it; undefined where Go gives an error (no
 * type, bad syntax after it, a malformed or conflicting parameter).
 */
export function mediaType(v: string): string | undefined {
  const semi = v.indexOf(";");
  const base = semi < 0 ? v : v.slice(0, semi);
  const mt = trimSpace(base.toLowerCase());
  const [typ, afterType] = consumeToken(mt);
  if (typ === "") return undefined;
  if (afterType !== "") {
    if (!afterType.startsWith("/")) return undefined;
    const [sub, afterSub] = consumeToken(afterType.slice(1));
    if (sub === "" || afterSub !== "") return undefined;
  }
  const params = new Map<string, string>();
  const starred = new Map<string, Map<string, string>>();
  let rest = v.slice(base.length);
  while (rest.length > 0) {
    rest = trimLeftSpace(rest);
    if (rest.length === 0) break;
    const [key, value, after] = consumeMediaParam(rest);
    if (key === "") {
      if (trimSpace(after) === ";") break; // trailing semicolons are allowed
      return undefined;
    }
    let pmap = params;
    const star = key.indexOf("*");
    if (star >= 0) {
      const baseName = key.slice(0, star);
      let m = starred.get(baseName);
      if (m === undefined) starred.set(baseName, (m = new Map()));
      pmap = m;
    }
    const prev = pmap.get(key);
    if (prev !== undefined && prev !== value) return undefined; // duplicate, differing
    pmap.set(key, value);
    rest = after;
  }
  return mt;
}

/**
 * s escaped for a URL query as Go's url.QueryEscape does: letters, digits
 * and `-_.~` stay, a space becomes `+`, every other UTF-8 byte `%XX`.
 */
export function queryEscape(s: string): string {
  let out = "";
  for (const b of Buffer.from(s, "utf8")) {
    const c = String.fromCharCode(b);
    if (/[A-Za-z0-9\-_.~]/.test(c)) out += c;
    else if (c === " ") out += "+";
    else out += "%" + b.toString(16).toUpperCase().padStart(2, "0");
  }
  return out;
}

/**
 * Reads body up to limit bytes and stops there, canceling the rest. It
 * rejects when reading fails; what was read is lost then.
 */
export async function readUpTo(body: ReadableStream<Uint8Array> | null, limit: number): Promise<Uint8Array> {
  if (body === null) return new Uint8Array(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    while (total < limit) {
      const { done, value } = await reader.read();
      if (done) break;
      const take = Math.min(value.byteLength, limit - total);
      chunks.push(take === value.byteLength ? value : value.subarray(0, take));
      total += take;
    }
  } finally {
    reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
  const out = new Uint8Array(total);
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.byteLength;
  }
  return out;
}
