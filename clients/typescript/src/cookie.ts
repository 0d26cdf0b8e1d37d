/**
 * The device cookie, as the Go client's `api/client/cookie.go`.
 *
 * @packageDocumentation
 */

import type { IncomingMessage, ServerResponse } from "node:http";

/** The device cookie's name unless the options say otherwise. */
export const defaultDeviceCookieName = "__Host-tollgate-device";

/** The longest device token, in bytes, as tollgate's (openapi.yaml's Token). */
const maxDeviceTokenBytes = 1024;

/** The longest Max-Age browsers keep: 400 days, in seconds. */
const maxCookieAgeSeconds = 400 * 24 * 3600;

/** The built-in policy's device_token_ttl, 90 days, in seconds. */
const defaultCookieAgeSeconds = 90 * 24 * 3600;

/** Go's limit on the cookies of a request it reads (net/http's httpcookiemaxnum default). */
const maxCookies = 3000;

/** The options of a {@link DeviceCookie}. */
export interface DeviceCookieOptions {
  /**
   * The cookie's name: "__Host-" and RFC 6265 token characters. Give each
   * device_trust group of flows a cookie of its own. Default
   * "__Host-tollgate-device".
   */
  name?: string | undefined;
  /**
   * How long the browser keeps the cookie after it was last set, in
   * seconds (whole seconds are used), from 1 to 400 days. Match it to the
   * flow's device_token_ttl. 0 or undefined is the default: 90 days
   * (7776000), the built-in policy's device_token_ttl.
   */
  maxAgeSeconds?: number | undefined;
}

/** A response whose Set-Cookie fields the node:http helpers append to (ServerResponse, Express's res). */
export type ResponseLike = Pick<ServerResponse, "getHeader" | "setHeader">;

/** A request whose Cookie field {@link DeviceCookie.fromRequest} reads. */
export type CookieRequestLike = Pick<IncomingMessage, "headers">;

/**
 * Keeps tollgate's device token in a cookie: "__Host-" named, Path=/,
 * Secure, HttpOnly, SameSite=Lax, no Domain, and a Max-Age. Browsers accept
 * a "__Host-" cookie only from a secure origin, without Domain and for the
 * whole host, so neither a sibling subdomain nor a plain-HTTP attacker can
 * plant or overwrite one; HttpOnly keeps it from scripts. Browsers treat
 * http://localhost as secure, so it works in development there.
 *
 * The token is a bearer credential for its device's own allowance of
 * failed logins: never log it or put it in a URL.
 */
export class DeviceCookie {
  readonly #name: string;
  readonly #maxAge: number;

  /** Checks options; throws when the name is not "__Host-" and token characters or maxAgeSeconds is out of range. */
  constructor(options: DeviceCookieOptions = {}) {
    const name = options.name ?? "";
    if (name !== "") {
      const rest = name.startsWith("__Host-") ? name.slice("__Host-".length) : "";
      if (rest === "" || !isToken(rest)) {
        throw new Error("tollgate: device cookie: name must be __Host- and token characters");
      }
    }
    this.#name = name === "" ? defaultDeviceCookieName : name;
    const age = options.maxAgeSeconds ?? 0;
    if (typeof age !== "number" || Number.isNaN(age)) throw new Error("tollgate: device cookie: maxAgeSeconds must be a number");
    if (age !== 0 && (age < 1 || age > maxCookieAgeSeconds)) {
      throw new Error("tollgate: device cookie: maxAgeSeconds must be from 1 to 400 days");
    }
    this.#maxAge = age === 0 ? defaultCookieAgeSeconds : Math.floor(age);
  }

  /** The cookie's name. */
  get name(): string {
    return this.#name;
  }

  /**
   * The Set-Cookie field value that stores token:
   * `<name>=<token>; Path=/; Max-Age=<seconds>; HttpOnly; Secure; SameSite=Lax`;
   * undefined for an empty token (a report that returned none), so every
   * report's device_token can be passed. Throws for a token longer than
   * 1024 bytes or with bytes a cookie cannot carry.
   */
  setCookie(token: string | undefined): string | undefined {
    if (token === undefined || token === "") return undefined;
    if (!validDeviceToken(token)) throw new Error("tollgate: device cookie: the token is too long or not cookie-safe");
    return this.#cookie(token, this.#maxAge);
  }

  /**
   * The Set-Cookie field value that deletes the cookie: an empty value,
   * Max-Age=0 and the attributes setCookie uses (browsers only accept a
   * "__Host-" cookie, even to delete it, with Path=/ and Secure).
   */
  clearCookie(): string {
    return this.#cookie("", 0);
  }

  /**
   * The device token a Cookie field holds (the first valid cookie of this
   * name, as Go's net/http reads them), or "" when there is none or it is
   * malformed: quoted, empty, longer than 1024 bytes or with bytes a cookie
   * cannot carry. Takes the field's value, or its lines. Never throws: send
   * "" as no token; tollgate verifies the token.
   */
  token(cookieHeader: string | readonly string[] | undefined): string {
    const lines = typeof cookieHeader === "string" ? [cookieHeader] : Array.isArray(cookieHeader) ? cookieHeader : [];
    let count = 0;
    for (const line of lines) count += typeof line === "string" ? line.split(";").length : 0;
    if (count === 0 || count > maxCookies) return "";
    for (const raw of lines) {
      if (typeof raw !== "string") continue;
      let line = trimASCII(raw);
      while (line.length > 0) {
        const semi = line.indexOf(";");
        let part = semi < 0 ? line : line.slice(0, semi);
        line = semi < 0 ? "" : line.slice(semi + 1);
        part = trimASCII(part);
        if (part === "") continue;
        const eq = part.indexOf("=");
        const name = trimASCII(eq < 0 ? part : part.slice(0, eq));
        let val = eq < 0 ? "" : part.slice(eq + 1);
        if (!isToken(name) || name !== this.#name) continue;
        let quoted = false;
        if (val.length > 1 && val[0] === '"' && val[val.length - 1] === '"') {
          val = val.slice(1, -1);
          quoted = true;
        }
        if (!validCookieValue(val)) continue; // Go skips a cookie it cannot parse
        return quoted || !validDeviceToken(val) ? "" : val;
      }
    }
    return "";
  }

  /** Appends the Set-Cookie field of {@link DeviceCookie.setCookie} to res (never overwriting others); nothing for "". Throws like setCookie. */
  set(res: ResponseLike, token: string | undefined): void {
    const v = this.setCookie(token);
    if (v !== undefined) appendSetCookie(res, v);
  }

  /** Appends the Set-Cookie field of {@link DeviceCookie.clearCookie} to res. */
  clear(res: ResponseLike): void {
    appendSetCookie(res, this.clearCookie());
  }

  /** The device token of a node:http request's Cookie field (see {@link DeviceCookie.token}). */
  fromRequest(req: CookieRequestLike): string {
    return this.token(req.headers?.cookie);
  }

  /** The Set-Cookie value for value and a Max-Age of maxAge seconds. */
  #cookie(value: string, maxAge: number): string {
    return `${this.#name}=${value}; Path=/; Max-Age=${maxAge}; HttpOnly; Secure; SameSite=Lax`;
  }
}

/** Appends v to res's Set-Cookie fields. */
function appendSetCookie(res: ResponseLike, v: string): void {
  const prev = res.getHeader("set-cookie");
  const list = prev === undefined ? [] : Array.isArray(prev) ? prev.map(String) : [String(prev)];
  list.push(v);
  res.setHeader("set-cookie", list);
}

/** Whether s is 1 to 1024 RFC 6265 cookie-octets. */
function validDeviceToken(s: string): boolean {
  return typeof s === "string" && s !== "" && s.length <= maxDeviceTokenBytes && /^[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]+$/.test(s);
}

/** Go's validCookieValueByte over s: 0x20 to 0x7e except `"`, `;` and `\`. */
function validCookieValue(s: string): boolean {
  return /^[\x20\x21\x23-\x3a\x3c-\x5b\x5d-\x7e]*$/.test(s);
}

/** Whether s is non-empty and only RFC 9110 token characters. */
function isToken(s: string): boolean {
  return /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(s);
}

/** s without leading and trailing ASCII space (space, tab, CR, LF), as Go's textproto.TrimString. */
function trimASCII(s: string): string {
  return s.replace(/^[ \t\r\n]+|[ \t\r\n]+$/g, "");
}
