/**
 * A browser's login form held on the server while the browser solves a
 * challenge, as the Go client's `api/client/hold.go`: so that the end user
 * does not type her password again, and the page she gets holds a random
 * handle and the challenge, never the submission (a server must not echo
 * a password into HTML, sealed or not). The submission is sealed with
 * AES-256-GCM under a key derived from the caller's hold key, bound to the
 * route it was posted to and the challenge issued for it, and kept under a
 * hash of the handle: a copy of the store reads nothing, and a handle is
 * no use with another challenge or on another route.
 *
 * @packageDocumentation
 */

import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from "node:crypto";

/**
 * Keeps sealed submissions for a short time. Keys are hex SHA-256 hashes of
 * the handles; values are opaque bytes. A site of several instances behind
 * one address shares one (a Redis, a database table), so that the post of
 * a challenge page reaches its submission on any instance. Each method may
 * answer at once or with a promise.
 */
export interface HoldStore {
  /** Keeps value under key for ttlMs; false (or a rejection) means nothing is held, and the captcha verdict is answered without a challenge page. */
  put(key: string, value: Uint8Array, ttlMs: number): boolean | Promise<boolean>;
  /** The value under key, or undefined when there is none or it expired. */
  get(key: string): Uint8Array | undefined | Promise<Uint8Array | undefined>;
  /** Removes key, if it is there. */
  delete(key: string): void | Promise<void>;
}

/** The options of a {@link MemoryHolds}. */
export interface MemoryHoldsOptions {
  /** Bounds the bytes of the values held; past it put answers false until some expire or are taken. Default 8 MiB. */
  maxBytes?: number | undefined;
  /** Bounds how many values are held. Default 20,000. */
  maxHolds?: number | undefined;
  /** The clock, in ms since the epoch. Default Date.now. */
  now?: (() => number) | undefined;
}

/**
 * A {@link HoldStore} in the process's memory, bounded by bytes and by
 * count: for a site of one instance (or sticky sessions). An attacker who
 * floods captcha verdicts can fill it; the end users then get the captcha
 * answer without a challenge page until holds expire, and nothing grows
 * past the bounds.
 */
export class MemoryHolds implements HoldStore {
  readonly #m = new Map<string, { value: Uint8Array; expires: number }>();
  #bytes = 0;
  readonly #maxBytes: number;
  readonly #maxHolds: number;
  readonly #now: () => number;

  constructor(options: MemoryHoldsOptions = {}) {
    this.#maxBytes = options.maxBytes !== undefined && options.maxBytes > 0 ? options.maxBytes : 8 << 20;
    this.#maxHolds = options.maxHolds !== undefined && options.maxHolds > 0 ? options.maxHolds : 20_000;
    this.#now = options.now ?? Date.now;
  }

  put(key: string, value: Uint8Array, ttlMs: number): boolean {
    const now = this.#now();
    this.#sweep(now);
    this.delete(key);
    if (this.#m.size >= this.#maxHolds || this.#bytes + value.byteLength > this.#maxBytes) return false;
    // A Map iterates in insertion order, and every hold lives about as
    // long: the oldest are first to expire, and #sweep stops at the first
    // one left.
    this.#m.set(key, { value: Uint8Array.from(value), expires: now + ttlMs });
    this.#bytes += value.byteLength;
    return true;
  }

  get(key: string): Uint8Array | undefined {
    const h = this.#m.get(key);
    if (h === undefined || this.#now() >= h.expires) return undefined;
    return Uint8Array.from(h.value);
  }

  delete(key: string): void {
    const h = this.#m.get(key);
    if (h !== undefined) {
      this.#bytes -= h.value.byteLength;
      this.#m.delete(key);
    }
  }

  /** How many values are held, expired ones not yet dropped included. */
  get size(): number {
    return this.#m.size;
  }

  #sweep(now: number): void {
    for (const [k, h] of this.#m) {
      if (now < h.expires) break;
      this.#bytes -= h.value.byteLength;
      this.#m.delete(k);
    }
  }
}

/** A handle's randomness: 256 bits, in base64url (43 characters). */
const handleBytes = 32;

/** A fresh random handle. */
export function newHandle(): string {
  return randomBytes(handleBytes).toString("base64url");
}

/** Whether s could be a handle {@link newHandle} made. */
export function wellFormedHandle(s: unknown): s is string {
  return typeof s === "string" && /^[A-Za-z0-9_-]{43}$/.test(s) && Buffer.from(s, "base64url").toString("base64url") === s;
}

/** The store key of handle: its hash, so that the store never holds the handle that unseals it. */
export function holdKey(handle: string): string {
  return createHash("sha256").update("tollgate client hold\0" + handle).digest("hex");
}

const nonceBytes = 12;
const tagBytes = 16;

/** Seals and opens held submissions under a key derived from the caller's. */
export class Sealer {
  readonly #key: Buffer;

  /** key: at least 32 bytes; the sealing key is its HMAC under a label of its own. */
  constructor(key: Uint8Array) {
    this.#key = createHmac("sha256", key).update("tollgate client hold seal v1").digest();
  }

  /** A random nonce, the sealed bytes and the tag, with handle and binding as associated data. */
  seal(handle: string, binding: string, plain: Uint8Array): Uint8Array {
    const nonce = randomBytes(nonceBytes);
    const c = createCipheriv("aes-256-gcm", this.#key, nonce);
    c.setAAD(ad(handle, binding));
    const body = Buffer.concat([c.update(plain), c.final()]);
    return Buffer.concat([nonce, body, c.getAuthTag()]);
  }

  /** seal's inverse; undefined for bytes not sealed for handle and binding. */
  open(handle: string, binding: string, blob: Uint8Array): Buffer | undefined {
    if (blob.byteLength < nonceBytes + tagBytes) return undefined;
    const b = Buffer.from(blob);
    try {
      const d = createDecipheriv("aes-256-gcm", this.#key, b.subarray(0, nonceBytes));
      d.setAAD(ad(handle, binding));
      d.setAuthTag(b.subarray(b.length - tagBytes));
      return Buffer.concat([d.update(b.subarray(nonceBytes, b.length - tagBytes)), d.final()]);
    } catch {
      return undefined;
    }
  }
}

function ad(handle: string, binding: string): Buffer {
  return Buffer.from(handle + "\0" + binding, "utf8");
}
