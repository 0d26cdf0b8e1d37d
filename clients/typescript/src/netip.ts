/**
 * A small IP address and prefix parser that matches Go's `net/netip`
 * exactly: the same strings are accepted (IPv4 in strict dotted decimal
 * without leading zeros, IPv6 with at most one `::`, an embedded IPv4 only
 * in the last 32 bits, zones only on IPv6) and the same canonical text comes
 * out (RFC 5952 for IPv6, `::ffff:a.b.c.d` for IPv4-mapped addresses).
 *
 * `node:net`'s `isIP` accepts and prints other forms, so the client-address
 * and allowance code, which must agree with the Go client byte for byte,
 * use this instead. Internal to the package.
 *
 * @packageDocumentation
 */

/** An IP address: IPv4, or IPv6 with an optional zone. Immutable. */
export class Addr {
  /** The 16 bytes of the address; an IPv4 address is held as `::ffff:a.b.c.d`. */
  readonly #bytes: Uint8Array;
  /** Whether this is an IPv4 address (not an IPv4-mapped IPv6 one). */
  readonly #v4: boolean;
  /** The IPv6 zone, or "". */
  readonly #zone: string;

  private constructor(bytes: Uint8Array, v4: boolean, zone: string) {
    this.#bytes = bytes;
    this.#v4 = v4;
    this.#zone = v4 ? "" : zone;
  }

  /** The IPv4 address of the four bytes. */
  static from4(a: number, b: number, c: number, d: number): Addr {
    const bytes = new Uint8Array(16);
    bytes[10] = 0xff;
    bytes[11] = 0xff;
    bytes[12] = a;
    bytes[13] = b;
    bytes[14] = c;
    bytes[15] = d;
    return new Addr(bytes, true, "");
  }

  /** The IPv6 address of the sixteen bytes, with zone. */
  static from16(bytes: Uint8Array, zone = ""): Addr {
    return new Addr(Uint8Array.from(bytes), false, zone);
  }

  /** Whether this is an IPv4 address (netip's `Is4`). */
  is4(): boolean {
    return this.#v4;
  }

  /** Whether this is an IPv6 address, IPv4-mapped ones included (netip's `Is6`). */
  is6(): boolean {
    return !this.#v4;
  }

  /** Whether this is an IPv4-mapped IPv6 address, in `::ffff:0:0/96` (netip's `Is4In6`). */
  is4In6(): boolean {
    if (this.#v4) return false;
    const b = this.#bytes;
    for (let i = 0; i < 10; i++) if (b[i] !== 0) return false;
    return b[10] === 0xff && b[11] === 0xff;
  }

  /** The zone of an IPv6 address, or "". */
  zone(): string {
    return this.#zone;
  }

  /** 32 for IPv4, 128 for IPv6. */
  bitLen(): number {
    return this.#v4 ? 32 : 128;
  }

  /** The address without an IPv4-mapped prefix: `::ffff:1.2.3.4` becomes `1.2.3.4` (netip's `Unmap`). */
  unmap(): Addr {
    return this.is4In6() ? new Addr(this.#bytes, true, "") : this;
  }

  /** The address with zone (none for ""); IPv4 addresses are returned unchanged. */
  withZone(zone: string): Addr {
    if (this.#v4 || zone === this.#zone) return this;
    return new Addr(this.#bytes, false, zone);
  }

  /** A copy of the 16-byte form. */
  as16(): Uint8Array {
    return Uint8Array.from(this.#bytes);
  }

  /**
   * The prefix of length bits that holds this address, its other bits
   * zeroed and its zone dropped (netip's `Addr.Prefix`); undefined when
   * bits is out of range for the family.
   */
  prefix(bits: number): Prefix | undefined {
    if (!Number.isInteger(bits) || bits < 0 || bits > this.bitLen()) return undefined;
    const effective = this.#v4 ? bits + 96 : bits;
    return Prefix.of(new Addr(mask(this.#bytes, effective), this.#v4, ""), bits);
  }

  /** Whether two addresses are the same, zone included. */
  equals(o: Addr): boolean {
    if (this.#v4 !== o.#v4 || this.#zone !== o.#zone) return false;
    for (let i = 0; i < 16; i++) if (this.#bytes[i] !== o.#bytes[i]) return false;
    return true;
  }

  /** The 16-bit group i (0 to 7) of the 16-byte form. */
  #group(i: number): number {
    return ((this.#bytes[2 * i] ?? 0) << 8) | (this.#bytes[2 * i + 1] ?? 0);
  }

  /** The dotted-decimal text of the last four bytes. */
  #string4(): string {
    const b = this.#bytes;
    return `${b[12]}.${b[13]}.${b[14]}.${b[15]}`;
  }

  /**
   * The canonical text, as netip's `String`: dotted decimal for IPv4,
   * `::ffff:a.b.c.d` for IPv4-mapped, RFC 5952 otherwise (lower-case hex,
   * no leading zeros, the longest run of two or more zero groups, the
   * first of equals, as `::`), with `%zone`.
   */
  toString(): string {
    if (this.#v4) return this.#string4();
    const zone = this.#zone === "" ? "" : "%" + this.#zone;
    if (this.is4In6()) return "::ffff:" + this.#string4() + zone;
    let zeroStart = -1;
    let zeroEnd = -1;
    for (let i = 0; i < 8; i++) {
      let j = i;
      while (j < 8 && this.#group(j) === 0) j++;
      if (j - i >= 2 && j - i > zeroEnd - zeroStart) {
        zeroStart = i;
        zeroEnd = j;
      }
    }
    let s = "";
    for (let i = 0; i < 8; i++) {
      if (i === zeroStart) {
        s += "::";
        i = zeroEnd;
        if (i >= 8) break;
      } else if (i > 0) {
        s += ":";
      }
      s += this.#group(i).toString(16);
    }
    return s + zone;
  }
}

/** An IP prefix: an address and a length, as netip's `Prefix` (never with a zone). */
export class Prefix {
  readonly #addr: Addr;
  readonly #bits: number;

  private constructor(addr: Addr, bits: number) {
    this.#addr = addr;
    this.#bits = bits;
  }

  /** The prefix of addr (its zone dropped) and bits, which must be in range for its family. */
  static of(addr: Addr, bits: number): Prefix {
    if (!Number.isInteger(bits) || bits < 0 || bits > addr.bitLen()) {
      throw new RangeError("netip: prefix length out of range");
    }
    return new Prefix(addr.withZone(""), bits);
  }

  /** The prefix's address, as given (not masked unless made so). */
  addr(): Addr {
    return this.#addr;
  }

  /** The prefix length. */
  bits(): number {
    return this.#bits;
  }

  /** The prefix with every bit past its length zeroed (netip's `Masked`). */
  masked(): Prefix {
    const p = this.#addr.prefix(this.#bits);
    if (p === undefined) throw new RangeError("netip: prefix length out of range");
    return p;
  }

  /**
   * Whether the prefix holds a (netip's `Contains`): never across families
   * (an IPv4-mapped address is not in an IPv4 prefix), never for an address
   * with a zone.
   */
  contains(a: Addr): boolean {
    if (a.zone() !== "" || a.bitLen() !== this.#addr.bitLen()) return false;
    const effective = a.is4() ? this.#bits + 96 : this.#bits;
    const x = mask(a.as16(), effective);
    const y = mask(this.#addr.as16(), effective);
    for (let i = 0; i < 16; i++) if (x[i] !== y[i]) return false;
    return true;
  }

  /** `<addr>/<bits>`, as netip's `Prefix.String`. */
  toString(): string {
    return this.#addr.toString() + "/" + String(this.#bits);
  }
}

/** bytes with every bit past the first bits cleared. */
function mask(bytes: Uint8Array, bits: number): Uint8Array {
  const out = Uint8Array.from(bytes);
  for (let i = 0; i < 16; i++) {
    const keep = bits - 8 * i;
    if (keep >= 8) continue;
    out[i] = keep <= 0 ? 0 : (out[i] ?? 0) & (0xff << (8 - keep));
  }
  return out;
}

/** Whether c (a UTF-16 code unit) is an ASCII digit. */
function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

/**
 * Parses the four dotted-decimal fields of s (netip's `parseIPv4Fields`):
 * each 1 to 3 digits, at most 255, no leading zero.
 */
function parseIPv4Fields(s: string): [number, number, number, number] | undefined {
  const fields: [number, number, number, number] = [0, 0, 0, 0];
  let val = 0;
  let pos = 0;
  let digLen = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (isDigit(c)) {
      if (digLen === 1 && val === 0) return undefined; // leading zero
      val = val * 10 + (c - 0x30);
      digLen++;
      if (val > 255) return undefined;
    } else if (c === 0x2e) {
      if (i === 0 || i === s.length - 1 || s.charCodeAt(i - 1) === 0x2e) return undefined;
      if (pos === 3) return undefined; // too long
      fields[pos] = val;
      pos++;
      val = 0;
      digLen = 0;
    } else {
      return undefined;
    }
  }
  if (pos < 3) return undefined; // too short
  fields[3] = val;
  return fields;
}

/** Parses s as an IPv6 address with an optional zone (netip's `parseIPv6`). */
function parseIPv6(input: string): Addr | undefined {
  let s = input;
  let zone = "";
  const pct = s.indexOf("%");
  if (pct !== -1) {
    zone = s.slice(pct + 1);
    s = s.slice(0, pct);
    if (zone === "") return undefined; // an explicit zone must not be empty
  }
  const ip = new Uint8Array(16);
  let ellipsis = -1;
  if (s.length >= 2 && s[0] === ":" && s[1] === ":") {
    ellipsis = 0;
    s = s.slice(2);
    if (s.length === 0) return Addr.from16(ip, zone);
  }
  let i = 0;
  while (i < 16) {
    let off = 0;
    let acc = 0;
    for (; off < s.length; off++) {
      const c = s.charCodeAt(off);
      if (isDigit(c)) acc = acc * 16 + (c - 0x30);
      else if (c >= 0x61 && c <= 0x66) acc = acc * 16 + (c - 0x61 + 10);
      else if (c >= 0x41 && c <= 0x46) acc = acc * 16 + (c - 0x41 + 10);
      else break;
      if (off > 3) return undefined; // more than 4 digits in a group
      if (acc > 0xffff) return undefined;
    }
    if (off === 0) return undefined; // no digits
    if (off < s.length && s[off] === ".") {
      // A trailing IPv4 address, in the last 32 bits only.
      if (ellipsis < 0 && i !== 12) return undefined;
      if (i + 4 > 16) return undefined;
      const f = parseIPv4Fields(s);
      if (f === undefined) return undefined;
      ip.set(f, i);
      s = "";
      i += 4;
      break;
    }
    ip[i] = acc >> 8;
    ip[i + 1] = acc & 0xff;
    i += 2;
    s = s.slice(off);
    if (s.length === 0) break;
    if (s[0] !== ":") return undefined;
    if (s.length === 1) return undefined; // a colon must be followed by more
    s = s.slice(1);
    if (s[0] === ":") {
      if (ellipsis >= 0) return undefined; // two ::
      ellipsis = i;
      s = s.slice(1);
      if (s.length === 0) break;
    }
  }
  if (s.length !== 0) return undefined; // trailing garbage
  if (i < 16) {
    if (ellipsis < 0) return undefined; // too short
    const n = 16 - i;
    for (let j = i - 1; j >= ellipsis; j--) ip[j + n] = ip[j] ?? 0;
    ip.fill(0, ellipsis, ellipsis + n);
  } else if (ellipsis >= 0) {
    return undefined; // :: must stand for at least one group
  }
  return Addr.from16(ip, zone);
}

/**
 * Parses s as an IP address, exactly as Go's `netip.ParseAddr`: dotted
 * decimal IPv4 (no leading zeros, no fewer or more than four fields), or
 * IPv6 with an optional `%zone`. Returns undefined for anything else.
 */
export function parseAddr(s: string): Addr | undefined {
  for (let i = 0; i < s.length; i++) {
    switch (s[i]) {
      case ".": {
        const f = parseIPv4Fields(s);
        return f === undefined ? undefined : Addr.from4(...f);
      }
      case ":":
        return parseIPv6(s);
      case "%":
        return undefined; // a zone without an address
    }
  }
  return undefined;
}

/**
 * Parses s as `ip:port` or `[ipv6]:port`, as Go's `netip.ParseAddrPort`,
 * and returns the address; undefined when s is not of that form.
 */
export function parseAddrPort(s: string): Addr | undefined {
  const i = s.lastIndexOf(":");
  if (i === -1) return undefined;
  let ip = s.slice(0, i);
  const port = s.slice(i + 1);
  if (ip === "" || port === "") return undefined;
  let v6 = false;
  if (ip[0] === "[") {
    if (ip.length < 2 || ip[ip.length - 1] !== "]") return undefined;
    ip = ip.slice(1, -1);
    v6 = true;
  }
  // strconv.ParseUint(port, 10, 16): digits only, at most 65535.
  if (!/^[0-9]+$/.test(port) || Number(port) > 0xffff) return undefined;
  const a = parseAddr(ip);
  if (a === undefined) return undefined;
  if (v6 !== a.is6()) return undefined;
  return a;
}

/**
 * Parses s as a prefix, exactly as Go's `netip.ParsePrefix`: an address
 * without zone, `/`, and a length in range for its family, in decimal
 * without sign or leading zeros. The address is kept as written (not
 * masked). Returns undefined for anything else.
 */
export function parsePrefix(s: string): Prefix | undefined {
  const i = s.lastIndexOf("/");
  if (i < 0) return undefined;
  const a = parseAddr(s.slice(0, i));
  if (a === undefined || a.zone() !== "") return undefined;
  const bitsStr = s.slice(i + 1);
  if (!/^(0|[1-9][0-9]*)$/.test(bitsStr)) return undefined;
  const bits = bitsStr.length > 3 ? Infinity : Number(bitsStr);
  if (bits > a.bitLen()) return undefined;
  return Prefix.of(a, bits);
}
