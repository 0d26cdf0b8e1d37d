/**
 * The end user's address behind trusted reverse proxies, as the Go
 * client's `api/client/clientip.go`.
 *
 * @packageDocumentation
 */

import type { IncomingMessage } from "node:http";

import { Prefix, parseAddr, parseAddrPort, parsePrefix, type Addr } from "./netip.js";

/** The forwarding header trusted proxies write: "x-forwarded-for", "forwarded" (RFC 7239), or "none" (any case). */
export type ProxyHeader = "x-forwarded-for" | "forwarded" | "none";

/** The options of {@link Proxies}. */
export interface ProxiesOptions {
  /**
   * The address ranges of your own reverse proxies and load balancers, in
   * CIDR form ("10.0.0.0/8", "2001:db8::/48"): only a request whose
   * connection comes from one of them has its header read. IPv4-mapped
   * IPv6 prefixes are taken as the IPv4 prefix; a prefix of length 0
   * (every address) is refused. Default: none, the client IP is always the
   * connection's peer.
   */
  trusted?: readonly string[] | undefined;
  /**
   * The one forwarding header your trusted proxies write, appending the
   * address of the peer they saw (nginx's $proxy_add_x_forwarded_for,
   * HAProxy's option forwardfor, or a Forwarded "for=" element). The other
   * header is never read: a proxy passes through whatever a client sends
   * in a header it does not manage. Required with trusted. Default "none".
   */
  header?: ProxyHeader | "X-Forwarded-For" | "Forwarded" | (string & {}) | undefined;
}

/** The longest Forwarded line read, in bytes: nginx's default limit on a header line. */
const maxForwardedLine = 8 << 10;

/** The parts of a request {@link Proxies.clientIP} reads. */
export type RequestLike = Pick<IncomingMessage, "socket"> & Partial<Pick<IncomingMessage, "rawHeaders" | "headers">>;

/**
 * Resolves the end user's address of a request that may have come through
 * trusted reverse proxies: the right-most address of the configured header
 * that is not a trusted proxy, read only on connections from one.
 *
 * Security: the answer is only as good as the configuration. Trusted must
 * hold only proxies you run (or your CDN's published ranges), each of
 * which appends the peer it saw to the header, and every path to the
 * service must go through them. When a client makes the header unreadable
 * the answer is the proxy's own address, which every such client shares:
 * never put your proxies' or internal ranges on an allow list.
 */
export class Proxies {
  readonly #trusted: Prefix[] = [];
  /** The header's lower-case name; "" reads none. */
  readonly #header: string = "";
  readonly #xff: boolean = false;

  /** Checks options; throws when a prefix is invalid or trusts every address, or trusted is set without a header. */
  constructor(options: ProxiesOptions = {}) {
    for (const s of options.trusted ?? []) {
      let pf = typeof s === "string" ? parsePrefix(s) : undefined;
      if (pf === undefined) throw new Error("tollgate: proxies: invalid trusted prefix (use CIDR form, such as 10.0.0.0/8)");
      if (pf.addr().is4In6()) {
        if (pf.bits() < 96) {
          throw new Error(`tollgate: proxies: trusted prefix ${pf.toString()} mixes IPv4-mapped and IPv6 addresses`);
        }
        pf = Prefix.of(pf.addr().unmap(), pf.bits() - 96);
      }
      if (pf.bits() === 0) {
        throw new Error(`tollgate: proxies: trusted prefix ${pf.toString()} trusts every address, letting any client choose its IP`);
      }
      this.#trusted.push(pf.masked());
    }
    const h = (options.header ?? "none").toLowerCase();
    switch (h) {
      case "none":
        if (this.#trusted.length > 0) throw new Error("tollgate: proxies: trusted needs the header those proxies write");
        break;
      case "forwarded":
      case "x-forwarded-for":
        this.#header = h;
        this.#xff = h === "x-forwarded-for";
        break;
      default:
        throw new Error("tollgate: proxies: unknown header (use x-forwarded-for, forwarded or none)");
    }
  }

  /**
   * The end user's address for a node:http request (Express's req is one),
   * in Go netip's canonical form, never with a zone or IPv4-mapped; "" when
   * the connection's peer is not an address. It reads
   * `req.socket.remoteAddress` and the header's field lines in order
   * (`req.rawHeaders`, each line kept apart). See {@link Proxies.resolve}.
   */
  clientIP(req: RequestLike): string {
    const peer = req.socket?.remoteAddress ?? "";
    const lines: Array<[string, string]> = [];
    const raw = req.rawHeaders;
    if (Array.isArray(raw)) {
      for (let i = 0; i + 1 < raw.length; i += 2) lines.push([raw[i] as string, raw[i + 1] as string]);
    } else if (this.#header !== "") {
      const v = req.headers?.[this.#header];
      for (const line of Array.isArray(v) ? v : v === undefined ? [] : [v]) lines.push([this.#header, line]);
    }
    return this.resolve(peer, lines);
  }

  /**
   * The end user's address from the connection's peer ("ip", "ip:port",
   * "[ip%zone]:port") and the request's header field lines, in order
   * (`[name, value]`, names in any case; lines of other headers are
   * ignored); "" when the peer is not an address:
   *
   * - The peer (port and zone dropped, unmapped) is the answer when it is
   *   not a trusted proxy; no header is read then.
   * - Otherwise the configured header's entries are walked from the right
   *   (each line a comma-separated list, empty entries skipped); the first
   *   that is not a trusted proxy is the answer.
   * - An entry that is not an address (unparsable, "unknown", an
   *   obfuscated node, a Forwarded element without for= or with two, an
   *   address with a zone, an unquoted or unbracketed IPv6 address in
   *   Forwarded, a Forwarded line that is not RFC 7239 syntax or is over
   *   8 KiB) stops the walk: the answer is the trusted hop that wrote it.
   * - When every entry is a trusted proxy, the answer is the left-most.
   */
  resolve(peer: string, lines: ReadonlyArray<readonly [name: string, value: string]>): string {
    const p = remoteAddr(typeof peer === "string" ? peer : "");
    if (p === undefined) return "";
    if (this.#header === "" || !this.#isTrusted(p)) return p.toString();
    const values = lines.filter(([name]) => typeof name === "string" && name.toLowerCase() === this.#header).map(([, v]) => String(v));
    let addr = p;
    // step takes the next entry from the right; false ends the walk.
    const step = (entry: string): boolean => {
      const a = parseNode(entry, this.#xff);
      if (a === undefined) return false; // addr wrote it: the last address known good
      addr = a;
      return this.#isTrusted(a);
    };
    for (let i = values.length - 1; i >= 0; i--) {
      const line = values[i] as string;
      if (this.#xff) {
        let rest = line;
        while (rest !== "") {
          let entry = rest;
          const j = rest.lastIndexOf(",");
          if (j >= 0) {
            entry = rest.slice(j + 1);
            rest = rest.slice(0, j);
          } else {
            rest = "";
          }
          entry = entry.replace(/^[ \t]+|[ \t]+$/g, "");
          if (entry !== "" && !step(entry)) return addr.toString();
        }
        continue;
      }
      const fors = forwardedFors(line);
      if (fors === undefined) return addr.toString();
      for (let j = fors.length - 1; j >= 0; j--) {
        if (!step(fors[j] as string)) return addr.toString();
      }
    }
    return addr.toString();
  }

  /** Whether a is in a trusted prefix. */
  #isTrusted(a: Addr): boolean {
    return this.#trusted.some((pf) => pf.contains(a));
  }
}

/** The address of a peer ("ip:port", "[ip%zone]:port" or a bare address), unmapped and without zone. */
function remoteAddr(s: string): Addr | undefined {
  const a = parseAddrPort(s) ?? parseAddr(s);
  return a?.withZone("").unmap();
}

/**
 * One hop: an X-Forwarded-For entry (xff) or a Forwarded for= value,
 * already unquoted; the unmapped address, or undefined for anything that
 * is not an address without zone.
 */
function parseNode(s: string, xff: boolean): Addr | undefined {
  if (s.startsWith("[")) {
    const end = s.indexOf("]");
    if (end < 0) return undefined;
    const rest = s.slice(end + 1);
    if (rest !== "" && !isPort(rest, xff)) return undefined;
    const a = parseAddr(s.slice(1, end));
    if (a === undefined || !a.is6() || a.zone() !== "") return undefined;
    return a.unmap();
  }
  if (xff && s.split(":").length - 1 > 1) {
    // bare IPv6
    const a = parseAddr(s);
    if (a === undefined || a.zone() !== "") return undefined;
    return a.unmap();
  }
  // IPv4, with or without a port
  let host = s;
  const i = s.indexOf(":");
  if (i >= 0) {
    if (!isPort(s.slice(i), xff)) return undefined;
    host = s.slice(0, i);
  }
  const a = parseAddr(host);
  return a !== undefined && a.is4() ? a : undefined;
}

/**
 * Whether s is ":" and a port: 1 to 5 digits, or with Forwarded (not xff)
 * also an obfuscated port ("_" and letters, digits, ".", "_", "-").
 */
function isPort(s: string, xff: boolean): boolean {
  if (s.length < 2 || s[0] !== ":") return false;
  const p = s.slice(1);
  if (!xff && p[0] === "_") return p.length > 1 && /^_[A-Za-z0-9._-]*$/.test(p);
  return /^[0-9]{1,5}$/.test(p);
}

/** Whether c is an RFC 9110 token character. */
function isTchar(c: string): boolean {
  return /^[!#$%&'*+\-.^_`|~0-9A-Za-z]$/.test(c);
}

/** The index of the first character at or after i that is not a space or tab. */
function skipOWS(s: string, i: number): number {
  while (i < s.length && (s[i] === " " || s[i] === "\t")) i++;
  return i;
}

/**
 * Parses one Forwarded field line (RFC 7239 §4, with optional white space
 * around ";" and ",") into the for= value of each non-empty element,
 * unquoted: "" for an element without for= or with it twice. undefined
 * when the line is not valid syntax or longer than 8 KiB.
 */
function forwardedFors(line: string): string[] | undefined {
  if (Buffer.byteLength(line, "utf8") > maxForwardedLine) return undefined;
  const fors: string[] = [];
  let i = 0;
  for (;;) {
    i = skipOWS(line, i);
    let value = "";
    let nfor = 0;
    let nonEmpty = false;
    while (i < line.length && line[i] !== ",") {
      if (line[i] === ";") {
        nonEmpty = true;
        i = skipOWS(line, i + 1);
        continue;
      }
      let start = i;
      while (i < line.length && isTchar(line.charAt(i))) i++;
      const name = line.slice(start, i);
      if (name === "" || i >= line.length || line[i] !== "=") return undefined;
      i++;
      let v: string;
      if (i < line.length && line[i] === '"') {
        const q = quotedString(line, i);
        if (q === undefined) return undefined;
        [v, i] = q;
      } else {
        start = i;
        while (i < line.length && isTchar(line.charAt(i))) i++;
        v = line.slice(start, i);
        if (v === "") return undefined;
      }
      nonEmpty = true;
      if (name.toLowerCase() === "for") {
        nfor++;
        value = v;
      }
      i = skipOWS(line, i);
      if (i < line.length && line[i] !== ";" && line[i] !== ",") return undefined;
    }
    if (nonEmpty) fors.push(nfor === 1 ? value : "");
    if (i >= line.length) return fors;
    i++; // the ","
  }
}

/** Parses the RFC 9110 quoted-string at s[i] (a '"'): its unescaped value and the index after it. */
function quotedString(s: string, i: number): [string, number] | undefined {
  let out = "";
  for (i++; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x22) return [out, i + 1];
    if (c === 0x5c) {
      i++;
      if (i >= s.length) return undefined;
      const e = s.charCodeAt(i);
      if ((e < 0x20 && e !== 0x09) || e === 0x7f) return undefined;
      out += s.charAt(i);
    } else if ((c < 0x20 && c !== 0x09) || c === 0x7f) {
      return undefined;
    } else {
      out += s.charAt(i);
    }
  }
  return undefined;
}
