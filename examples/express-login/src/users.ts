// The demo's accounts: salted PBKDF2 hashes, checked in constant time, an
// unknown name costing the same work as a wrong password.

import { pbkdf2, randomBytes, timingSafeEqual } from "node:crypto";
import { promisify } from "node:util";

const derive = promisify(pbkdf2);

/** A demo account. */
export interface User {
  /** what the user types to sign in; names are compared in lower case */
  name: string;
  /** shown on the login page (a demo); the store keeps only a salted hash */
  password: string;
  /** where the account's codes go, in international format */
  phone: string;
}

/** The demo's accounts: the same as examples/demo-login's. */
export const demoUsers: readonly User[] = Object.freeze([
  { name: "alice", password: "wonderland-42", phone: "+44 7400 123456" },
  { name: "bob", password: "builder-42", phone: "+44 7400 654321" },
]);

/** OWASP's PBKDF2-HMAC-SHA256 iteration count, the default. */
export const defaultHashIterations = 600_000;

/** An account as the store keeps it. */
export interface Account {
  name: string;
  phone: string;
}

interface Stored extends Account {
  salt: Buffer;
  hash: Buffer;
}

/** UserStore holds the accounts; it is read-only once built. */
export class UserStore {
  private constructor(
    private readonly iterations: number,
    private readonly accounts: Map<string, Stored>,
    /** hashed against when the name is unknown */
    private readonly dummy: Stored,
  ) {}

  static async create(users: readonly User[], iterations: number): Promise<UserStore> {
    if (!Number.isSafeInteger(iterations) || iterations < 1) {
      throw new Error(`hash iterations must be a positive integer, not ${iterations}`);
    }
    const stored = async (u: User): Promise<Stored> => {
      const salt = randomBytes(16);
      const hash = await derive(u.password, salt, iterations, 32, "sha256");
      return { name: u.name.toLowerCase(), phone: u.phone, salt, hash };
    };
    const accounts = new Map<string, Stored>();
    for (const u of users) {
      const key = u.name.toLowerCase();
      if (key === "" || accounts.has(key)) {
        throw new Error(`user ${JSON.stringify(u.name)}: empty or repeated name`);
      }
      accounts.set(key, await stored(u));
    }
    const dummy = await stored({ name: "", password: randomBytes(16).toString("base64url"), phone: "" });
    return new UserStore(iterations, accounts, dummy);
  }

  /**
   * verify returns the account when name and password match one, or
   * undefined. It hashes the password whether or not the name exists, so
   * that its timing does not tell an unknown name from a wrong password.
   */
  async verify(name: string, password: string): Promise<Account | undefined> {
    const found = this.accounts.get(name.toLowerCase());
    const a = found ?? this.dummy;
    const got = await derive(password, a.salt, this.iterations, 32, "sha256");
    if (!timingSafeEqual(got, a.hash) || found === undefined) {
      return undefined;
    }
    return { name: a.name, phone: a.phone };
  }
}
