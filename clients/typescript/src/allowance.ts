/**
 * The FailOpen allowance, as the Go client's `api/client/allowance.go`:
 * while tollgate gives no verdict, {@link failOpen} proceeds only within a
 * small local allowance per account (a send's destination) and per client
 * address, kept as GCRA buckets under HMAC-SHA-256 keys so that no
 * identifier is ever held.
 *
 * @packageDocumentation
 */

import { createHmac, randomBytes } from "node:crypto";

import { foldAccount } from "./fold.js";
import { parseAddr } from "./netip.js";
import { defaultSendFlow, type CheckRequest, type SendRequest } from "./wire.js";

/** failOpenPerAccount's default: the built-in login policy's own `free`. */
export const defaultFailOpenPerAccount = 5;
/** failOpenPerAddress's default: matches the policy's ip_failures (100 an hour). */
export const defaultFailOpenPerAddress = 50;
/** failOpenWindowMs's default: 30 minutes, over which a spent allowance comes back evenly. */
export const defaultFailOpenWindowMs = 30 * 60 * 1000;
/** failOpenSubjects's default: accounts (and destinations) tracked, and as many addresses. */
export const defaultFailOpenSubjects = 10_000;

/**
 * What the FailOpen allowance answered since the client was made. The
 * client exports no metrics of its own: put these in yours, and alert on
 * the refusals, which mean an outage is being used.
 */
export interface Stats {
  /** How many failOpen checks and sends proceeded while tollgate gave no verdict. */
  failOpenProceeds: number;
  /** How many were answered with a delay because their account (a send's destination) had spent its allowance. */
  failOpenRefusedAccount: number;
  /** How many were answered with a delay because their address had spent its allowance (and their account had not). */
  failOpenRefusedAddress: number;
  /** How many accounts (with destinations) the allowance holds now, at most failOpenSubjects. */
  trackedAccounts: number;
  /** How many addresses the allowance holds now, at most failOpenSubjects. */
  trackedAddresses: number;
  /** How many subjects were dropped from a full table before their allowance had refilled. */
  evicted: number;
}

/** The allowance's settings, checked by {@link Allowance}'s constructor. */
export interface AllowanceConfig {
  /** Fallback proceeds per account; 0 or undefined for the default; negative turns the limit off. */
  perAccount?: number | undefined;
  /** Fallback proceeds per address; 0 or undefined for the default; negative turns the limit off. */
  perAddress?: number | undefined;
  /** How long a spent allowance takes to come back whole, in ms; 0 or undefined for the default. */
  windowMs?: number | undefined;
  /** How many subjects of each kind are tracked; 0 or undefined for the default. */
  subjects?: number | undefined;
}

/** The kinds of subject, the first byte hashed, so that an account, a destination and an address never share a key. */
const kindAccount = 0x61; // 'a'
const kindDestination = 0x64; // 'd'
const kindAddress = 0x69; // 'i'

/** What a FailOpen call is counted on, as the caller sent it; it lives for the call only. "" is not counted. */
export interface Subject {
  /** kindAccount or kindDestination. */
  kind: number;
  /** The flow. */
  flow: string;
  /** The account or the destination, folded. */
  account: string;
  /** The client address as sent. */
  ip: string;
  /** The request's captcha_solved. */
  captchaOK: boolean;
}

/** The ASCII digits of s. */
function digits(s: string): string {
  return s.replace(/[^0-9]/g, "");
}

/**
 * What a check is counted on: its flow's account, folded as tollgate folds
 * it ({@link foldAccount}), and its address.
 */
export function checkSubject(req: CheckRequest): Subject {
  return {
    kind: kindAccount,
    flow: str(req.flow),
    account: foldAccount(str(req.account)),
    ip: str(req.ip),
    captchaOK: req.captcha_solved === true,
  };
}

/**
 * What a send is counted on: its flow's destination (an e-mail address
 * folded like an account, a phone number by its digits, whatever the
 * channel) and address.
 */
export function sendSubject(req: SendRequest): Subject {
  const flow = str(req.flow) === "" ? defaultSendFlow : str(req.flow);
  let dst = str(req.destination);
  dst = req.channel === "email" || dst.includes("@") ? "e:" + foldAccount(dst) : "p:" + digits(dst);
  return { kind: kindDestination, flow, account: dst, ip: str(req.ip), captchaOK: req.captcha_solved === true };
}

/** v if a string, else "" (a request from untyped code). */
function str(v: unknown): string {
  return typeof v === "string" ? v : "";
}

/**
 * The form of an address that is hashed: an IPv4 address (IPv4-mapped ones
 * too) whole, an IPv6 address by its /64; anything else as it is, marked.
 */
export function addressKey(ip: string): string {
  const parsed = parseAddr(ip);
  if (parsed === undefined) return "?" + ip;
  const a = parsed.unmap().withZone("");
  if (a.is4()) return a.toString();
  return String(a.prefix(64));
}

/** One subject's bucket: tat is when it will be full again (ms); pos is its index in the heap. */
interface Bucket {
  key: string;
  tat: number;
  pos: number;
}

/** One kind's table: at most max buckets, in a min-heap by tat, so that the one dropped first is closest to full. */
class Buckets {
  /** window/n: one proceed comes back every `every` ms. */
  readonly every: number;
  /** window - every: how far tat may run ahead of now. */
  readonly slack: number;
  readonly max: number;
  readonly byKey = new Map<string, Bucket>();
  readonly heap: Bucket[] = [];

  /** A table whose buckets refill one proceed every `every` ms, holding at most max. */
  constructor(every: number, slack: number, max: number) {
    this.every = every;
    this.slack = slack;
    this.max = max;
  }

  /** Whether b has a proceed left at t. */
  has(b: Bucket, t: number): boolean {
    return b.tat - this.slack <= t;
  }

  /** Drops the buckets that are full at t. */
  prune(t: number): void {
    for (let top = this.heap[0]; top !== undefined && top.tat <= t; top = this.heap[0]) {
      this.pop();
      this.byKey.delete(top.key);
    }
  }

  /** Takes one proceed from b (undefined: a new bucket for key) at t; answers how many buckets were evicted. */
  spend(b: Bucket | undefined, key: string, t: number): number {
    if (b !== undefined) {
      b.tat = Math.max(b.tat, t) + this.every;
      this.fix(b.pos);
      return 0;
    }
    let evicted = 0;
    if (this.heap.length >= this.max) {
      // Full: drop the bucket closest to full, which gives back the least.
      const old = this.pop();
      if (old !== undefined) this.byKey.delete(old.key);
      evicted = 1;
    }
    const nb: Bucket = { key, tat: t + this.every, pos: this.heap.length };
    this.byKey.set(key, nb);
    this.heap.push(nb);
    this.up(nb.pos);
    return evicted;
  }

  private swap(i: number, j: number): void {
    const a = this.heap[i] as Bucket;
    const b = this.heap[j] as Bucket;
    this.heap[i] = b;
    this.heap[j] = a;
    b.pos = i;
    a.pos = j;
  }

  private less(i: number, j: number): boolean {
    return (this.heap[i] as Bucket).tat < (this.heap[j] as Bucket).tat;
  }

  private up(j: number): void {
    while (j > 0) {
      const i = (j - 1) >> 1;
      if (i === j || !this.less(j, i)) break;
      this.swap(i, j);
      j = i;
    }
  }

  /** container/heap's down: sifts heap[i0] down among the first n buckets; true if it moved. */
  private down(i0: number, n: number): boolean {
    let i = i0;
    for (;;) {
      const j1 = 2 * i + 1;
      if (j1 >= n) break;
      let j = j1;
      const j2 = j1 + 1;
      if (j2 < n && this.less(j2, j1)) j = j2;
      if (!this.less(j, i)) break;
      this.swap(i, j);
      i = j;
    }
    return i > i0;
  }

  private fix(i: number): void {
    if (!this.down(i, this.heap.length)) this.up(i);
  }

  /** Removes and returns the bucket with the earliest tat. */
  private pop(): Bucket | undefined {
    const n = this.heap.length - 1;
    if (n < 0) return undefined;
    this.swap(0, n);
    this.down(0, n);
    return this.heap.pop();
  }
}

/**
 * FailOpen's local limit: a table of accounts (and sends' destinations)
 * and one of addresses, each keyed by 128 bits of an HMAC-SHA-256 of the
 * subject under a random key made for this client, so that no identifier
 * is kept. Each table holds at most `subjects` buckets; a bucket whose
 * allowance has refilled is dropped, and when a table is full a new
 * subject takes the place of the one closest to a full allowance.
 */
export class Allowance {
  readonly #key: Buffer | undefined;
  readonly #accounts: Buckets | undefined;
  readonly #addresses: Buckets | undefined;
  #proceeds = 0;
  #refusedAccount = 0;
  #refusedAddress = 0;
  #evicted = 0;

  /** Checks cfg as the Go client's newAllowance does; throws on an unusable one. */
  constructor(cfg: AllowanceConfig) {
    const perAccount = intOr(cfg.perAccount, defaultFailOpenPerAccount, "failOpenPerAccount");
    const perAddress = intOr(cfg.perAddress, defaultFailOpenPerAddress, "failOpenPerAddress");
    const windowMs = numOr(cfg.windowMs, defaultFailOpenWindowMs, "failOpenWindowMs");
    if (windowMs < 0) throw new Error("tollgate: failOpenWindowMs must not be negative");
    const subjects = intOr(cfg.subjects, defaultFailOpenSubjects, "failOpenSubjects");
    if (subjects < 0) throw new Error("tollgate: failOpenSubjects must not be negative");
    const table = (n: number): Buckets | undefined => {
      if (n < 0) return undefined; // turned off
      // Go divides nanoseconds as integers: a window under n ns leaves nothing.
      const everyNs = Math.floor((windowMs * 1e6) / n);
      if (everyNs <= 0) throw new Error("tollgate: failOpenWindowMs is too short for its allowance");
      const every = everyNs / 1e6;
      return new Buckets(every, windowMs - every, subjects);
    };
    this.#accounts = table(perAccount);
    this.#addresses = table(perAddress);
    this.#key = this.#accounts || this.#addresses ? randomBytes(32) : undefined;
  }

  /**
   * Spends one fallback proceed of s's account and address at now (ms),
   * and reports whether both had one left; when either had not, neither is
   * spent, so that a spraying address does not spend its victims'
   * allowance and a hammered account does not spend its guessers'
   * addresses'.
   */
  take(now: number, s: Subject): boolean {
    const accounts = this.#accounts;
    const addresses = this.#addresses;
    if (accounts === undefined && addresses === undefined) {
      this.#proceeds++;
      return true;
    }
    let acct: Bucket | undefined;
    let addr: Bucket | undefined;
    let acctKey = "";
    let addrKey = "";
    const countAccount = accounts !== undefined && s.account !== "";
    const countAddress = addresses !== undefined && s.ip !== "";
    if (countAccount) {
      accounts.prune(now);
      acctKey = this.#hash(s.kind, s.flow, s.account);
      acct = accounts.byKey.get(acctKey);
      if (acct !== undefined && !accounts.has(acct, now)) {
        this.#refusedAccount++;
        return false;
      }
    }
    if (countAddress) {
      addresses.prune(now);
      addrKey = this.#hash(kindAddress, s.flow, addressKey(s.ip));
      addr = addresses.byKey.get(addrKey);
      if (addr !== undefined && !addresses.has(addr, now)) {
        this.#refusedAddress++;
        return false;
      }
    }
    if (countAccount) this.#evicted += accounts.spend(acct, acctKey, now);
    if (countAddress) this.#evicted += addresses.spend(addr, addrKey, now);
    this.#proceeds++;
    return true;
  }

  /** The counts, and how many subjects each table holds now. */
  stats(): Stats {
    return {
      failOpenProceeds: this.#proceeds,
      failOpenRefusedAccount: this.#refusedAccount,
      failOpenRefusedAddress: this.#refusedAddress,
      trackedAccounts: this.#accounts?.byKey.size ?? 0,
      trackedAddresses: this.#addresses?.byKey.size ?? 0,
      evicted: this.#evicted,
    };
  }

  /** 128 bits of the HMAC of kind, flow, a zero byte and value, as a binary string. */
  #hash(kind: number, flow: string, value: string): string {
    const mac = createHmac("sha256", this.#key as Buffer);
    mac.update(Uint8Array.of(kind));
    mac.update(flow, "utf8");
    mac.update(Uint8Array.of(0));
    mac.update(value, "utf8");
    return mac.digest().subarray(0, 16).toString("latin1");
  }
}

/** v as an integer setting: its default for undefined or 0; throws on a non-integer. */
function intOr(v: number | undefined, def: number, name: string): number {
  if (v === undefined || v === 0) return def;
  if (!Number.isSafeInteger(v)) throw new Error(`tollgate: ${name} must be an integer`);
  return v;
}

/** v as a duration setting in ms: its default for undefined or 0; throws on a non-finite one. */
function numOr(v: number | undefined, def: number, name: string): number {
  if (v === undefined || v === 0) return def;
  if (typeof v !== "number" || !Number.isFinite(v)) throw new Error(`tollgate: ${name} must be a finite number`);
  return v;
}

/** The kinds, for tests. */
export const subjectKinds = { account: kindAccount, destination: kindDestination, address: kindAddress } as const;
