// Sessions in memory, bounded and expiring, as examples/demo-login's.

import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { SMS } from "./pages.js";

/**
 * The demo's own session cookie. Like the device cookie it is "__Host-"
 * prefixed, Secure and HttpOnly; browsers accept Secure cookies from
 * http://127.0.0.1 and http://localhost.
 */
export const sessionCookie = "__Host-demo-session";

/** how long a session that passed the password step has to pass the code step */
const pendingTTL = 10 * 60_000;
/** how long a signed-in session lasts */
const signedInTTL = 60 * 60_000;
/** how long a sent code can be used */
export const codeTTL = 5 * 60_000;
/** bounds the sessions kept in memory */
const maxSessions = 10_000;
/** bounds the messages a session's phone panel shows */
export const maxSMS = 10;

/** One browser's state after the password step. */
export interface Session {
  id: string;
  /** the account's name */
  user: string;
  phone: string;
  signedIn: boolean;
  expires: number;
  /** the device token of the login success: the device cookie's, once the code step has passed too */
  loginToken: string;
  code: string;
  codeExpires: number;
  sms: SMS[];
}

function newID(): string {
  return randomBytes(20).toString("base64url");
}

function copy(s: Session): Session {
  return { ...s, sms: [...s.sms] };
}

/** Sessions keeps sessions in memory. */
export class Sessions {
  private readonly m = new Map<string, Session>();

  constructor(private readonly now: () => number = Date.now) {}

  /** create starts a session for an account that passed the password step; undefined when the store is full. */
  create(user: string, phone: string, loginToken: string): Session | undefined {
    const now = this.now();
    if (this.m.size >= maxSessions) {
      for (const [id, v] of this.m) {
        if (now >= v.expires) this.m.delete(id);
      }
      if (this.m.size >= maxSessions) return undefined;
    }
    const v: Session = {
      id: newID(), user, phone, signedIn: false, expires: now + pendingTTL,
      loginToken, code: "", codeExpires: 0, sms: [],
    };
    this.m.set(v.id, v);
    return copy(v);
  }

  /** get returns a copy of the request's live session, if any. */
  get(req: IncomingMessage): Session | undefined {
    const id = readCookie(req.headers.cookie, sessionCookie);
    if (id === undefined) return undefined;
    const v = this.m.get(id);
    if (v === undefined) return undefined;
    if (this.now() >= v.expires) {
      this.m.delete(id);
      return undefined;
    }
    return copy(v);
  }

  /** update changes session id with f; false when it is gone. */
  update(id: string, f: (v: Session) => void): boolean {
    const v = this.m.get(id);
    if (v === undefined || this.now() >= v.expires) return false;
    f(v);
    return true;
  }

  /**
   * signIn marks the session signed in under a fresh id, so that an id seen
   * before the code step is worth nothing after it, and returns it.
   */
  signIn(id: string): Session | undefined {
    const v = this.m.get(id);
    if (v === undefined || this.now() >= v.expires) return undefined;
    this.m.delete(id);
    v.id = newID();
    v.signedIn = true;
    v.expires = this.now() + signedInTTL;
    v.loginToken = "";
    v.code = "";
    this.m.set(v.id, v);
    return copy(v);
  }

  /** end deletes session id. */
  end(id: string): void {
    this.m.delete(id);
  }

  /** idOf is the request's session id, if it sent one. */
  idOf(req: IncomingMessage): string | undefined {
    return readCookie(req.headers.cookie, sessionCookie);
  }
}

/** readCookie is the first value of cookie name in a Cookie header. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(";")) {
    const i = part.indexOf("=");
    if (i >= 0 && part.slice(0, i).trim() === name) {
      return part.slice(i + 1).trim();
    }
  }
  return undefined;
}

/** appendSetCookie adds a Set-Cookie field, keeping those already set (the device cookies'). */
export function appendSetCookie(res: ServerResponse, value: string): void {
  const old = res.getHeader("set-cookie");
  const list = old === undefined ? [] : Array.isArray(old) ? old : [String(old)];
  res.setHeader("set-cookie", [...list, value]);
}

/** setSessionCookie sends the session id to the browser. */
export function setSessionCookie(res: ServerResponse, id: string): void {
  appendSetCookie(res, `${sessionCookie}=${id}; Path=/; HttpOnly; Secure; SameSite=Lax`);
}

/** clearSessionCookie tells the browser to drop the session cookie. */
export function clearSessionCookie(res: ServerResponse): void {
  appendSetCookie(res, `${sessionCookie}=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Lax`);
}
