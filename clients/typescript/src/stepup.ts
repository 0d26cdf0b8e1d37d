/**
 * The second factor of the Express middleware ({@link Guard}): what a login
 * whose success report was answered step_up waits on, where it waits (a
 * {@link StepUpStore}, on the server), and the default factor, a 6-digit
 * code sent through the operator's sender ({@link codeFactor}).
 *
 * @packageDocumentation
 */

import { createHash, randomInt, timingSafeEqual } from "node:crypto";

/**
 * A login waiting on its second factor, kept on the server (never in a
 * cookie the browser could read or forge): the browser holds only a
 * random id, signed, in an HttpOnly cookie.
 */
export interface StepUpRecord {
  /** The account as the end user typed it: what the check and the reports name. */
  account: string;
  /** The end user's address when the password was checked. */
  ip: string;
  /** The device token the login's check carried, if any. */
  device: string;
  /** The step-up ticket: the step_up verdict's attempt. */
  ticket: string;
  /** The route's own reference for the end user (Attempt.ref). */
  ref: string;
  /** Why tollgate asked (breached_password, account_under_attack, ...), for the factor and the logs; never for the end user. */
  reasons: string[];
  /** What the route (or Passport's verify callback) gave for the user: handed to signIn once the factor passes. */
  user: unknown;
  /** When the login is forgotten, in ms since the epoch. */
  expiresAt: number;
  /** Wrong answers so far. */
  tries: number;
  /** The factor's own state (the default factor keeps its code's hash and expiry here). */
  factor: Record<string, unknown>;
}

/**
 * Where logins wait on their second factor. The default,
 * {@link MemoryStepUps}, is right for one instance; several instances
 * behind one address need a shared store (the records then travel
 * serialized: keep `user` serializable, or give an id and look it up in
 * signIn), or sticky sessions.
 */
export interface StepUpStore {
  /** The record under id, or undefined when none (or expired). */
  get(id: string): Promise<StepUpRecord | undefined>;
  /** Keeps r under id for ttlMs; false when it cannot be kept (full). */
  put(id: string, r: StepUpRecord, ttlMs: number): Promise<boolean>;
  /** Forgets id. */
  delete(id: string): Promise<void>;
}

/** The options of {@link MemoryStepUps}. */
export interface MemoryStepUpsOptions {
  /** The most logins waiting at once; past it the one closest to expiry gives way. Default 10,000. */
  max?: number | undefined;
  /** The clock, in ms since the epoch. Default Date.now. */
  now?: (() => number) | undefined;
}

/**
 * A bounded in-process {@link StepUpStore}: expired records are dropped,
 * and when it is full the record closest to expiry gives way, so a flood
 * of logins cannot grow it past `max`. One instance only.
 */
export class MemoryStepUps implements StepUpStore {
  readonly #m = new Map<string, { r: StepUpRecord; until: number }>();
  readonly #max: number;
  readonly #now: () => number;

  constructor(o: MemoryStepUpsOptions = {}) {
    this.#max = o.max !== undefined && o.max > 0 ? Math.floor(o.max) : 10_000;
    this.#now = o.now ?? Date.now;
  }

  /** How many records it holds, expired ones not yet dropped included. */
  get size(): number {
    return this.#m.size;
  }

  async get(id: string): Promise<StepUpRecord | undefined> {
    const e = this.#m.get(id);
    if (e === undefined) return undefined;
    if (e.until <= this.#now()) {
      this.#m.delete(id);
      return undefined;
    }
    return e.r;
  }

  async put(id: string, r: StepUpRecord, ttlMs: number): Promise<boolean> {
    const now = this.#now();
    if (!this.#m.has(id) && this.#m.size >= this.#max) {
      let victim: string | undefined;
      let soonest = Infinity;
      for (const [k, e] of this.#m) {
        if (e.until <= now) {
          this.#m.delete(k);
          continue;
        }
        if (e.until < soonest) {
          soonest = e.until;
          victim = k;
        }
      }
      if (this.#m.size >= this.#max && victim !== undefined) this.#m.delete(victim);
    }
    this.#m.set(id, { r, until: now + ttlMs });
    return true;
  }

  async delete(id: string): Promise<void> {
    this.#m.delete(id);
  }
}

/**
 * A second factor: started once a login's success report answered
 * step_up, then verified on each post of the page the middleware serves.
 * Replace the default code with your own (TOTP, a security key's
 * assertion posted by your page's script, a link) through the guard's
 * `stepUp.factor`; the middleware still does the rest: the step_up check
 * before each verification, the step_up_passed / step_up_failed report,
 * the device cookie, and signIn only once verify said true.
 */
export interface SecondFactor {
  /** Starts the factor for r (send a code, say), keeping what verify needs in r.factor; a rejection fails the start (no record kept). */
  start(r: StepUpRecord): Promise<void>;
  /** Whether the posted form passes; it must compare in constant time and honour its own expiry. */
  verify(r: StepUpRecord, form: Record<string, unknown>): Promise<boolean>;
  /** The form fields of the page (trusted HTML), inside its form. Default: the code's input. */
  fields?: (() => string) | undefined;
}

/** The options of {@link codeFactor}. */
export interface CodeFactorOptions {
  /**
   * Sends code to the account's owner (e-mail, SMS): the account as the end
   * user typed it and the user the route gave, to find the address. Never
   * log the code. Required.
   */
  sendCode: (account: string, code: string, user: unknown) => void | Promise<void>;
  /** How long a code is accepted, in ms. Default 10 minutes. */
  ttlMs?: number | undefined;
  /** The clock, in ms since the epoch. Default Date.now. */
  now?: (() => number) | undefined;
}

/** The form field of the default factor's code. */
export const codeField = "code";

/**
 * The default second factor: a random 6-digit code (crypto.randomInt),
 * sent through sendCode, kept on the server as its SHA-256 only, accepted
 * once (the middleware forgets the login when it passes) until it expires
 * (10 minutes by default), compared in constant time.
 */
export function codeFactor(o: CodeFactorOptions): SecondFactor {
  if (o === null || typeof o !== "object" || typeof o.sendCode !== "function") {
    throw new Error("tollgate: step-up: codeFactor needs sendCode");
  }
  const ttl = o.ttlMs !== undefined && o.ttlMs > 0 ? o.ttlMs : 10 * 60_000;
  const now = o.now ?? Date.now;
  return {
    async start(r) {
      const code = String(randomInt(0, 1_000_000)).padStart(6, "0");
      r.factor["codeHash"] = digest(code).toString("hex");
      r.factor["codeExpires"] = now() + ttl;
      await o.sendCode(r.account, code, r.user);
    },
    async verify(r, form) {
      const raw = form[codeField];
      const got = (typeof raw === "string" ? raw : Array.isArray(raw) && typeof raw[0] === "string" ? raw[0] : "").replace(/\s+/g, "");
      const want = r.factor["codeHash"];
      const until = r.factor["codeExpires"];
      if (typeof want !== "string" || want.length !== 64 || typeof until !== "number") return false;
      // Both sides are hashes of equal length, so the comparison's time
      // says nothing of the code, and a short or long input costs the same.
      const same = timingSafeEqual(digest(got), Buffer.from(want, "hex"));
      const ok = same && now() < until && /^[0-9]{6}$/.test(got);
      // Spent at once, in the same turn of the event loop as the
      // comparison: a second post racing this one finds no code.
      if (ok) delete r.factor["codeHash"];
      return ok;
    },
    fields: () =>
      `<label for="tollgate-code">Code</label>\n<input id="tollgate-code" name="${codeField}" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]*" maxlength="12" required autofocus>`,
  };
}

function digest(s: string): Buffer {
  return createHash("sha256").update("tollgate step-up code\0" + s, "utf8").digest();
}
