/**
 * The held-subjects admin calls' wire types: who is held back now
 * (GET /v1/admin/held) and a bulk unlock (POST /v1/admin/reset-held).
 */
import type { Shape } from "./wire.js";

/** A query of held subjects (GET /v1/admin/held); fields left out select all. */
export interface HeldQuery {
  /** The flow's subjects only. */
  flow?: string | undefined;
  /** "account" or "ip". */
  kind?: "account" | "ip" | (string & {}) | undefined;
  /** The previous page's next, unchanged. */
  cursor?: string | undefined;
  /** 1 to 1000; tollgate's 100 when left out. */
  limit?: number | undefined;
}

/** A subject held back now: an account in backoff or an address over a limit. */
export interface HeldSubject {
  /** The account (normalized) or the address, decrypted for this answer alone. */
  subject: string;
  flow: string;
  /** "account" or "ip". */
  kind: string;
  /** The rule that holds it, and its reason. */
  rule: string;
  reason: string;
  /** How long its wait still runs, in ms; 0 when a log over its limit holds it (over). */
  wait_ms: number;
  over: boolean;
  /** When it was last found held with a longer hold (RFC 3339). */
  since: string;
  /** How long until the state that holds it is forgotten, and the entry with it. */
  expires_in_ms: number;
}

/** A page of held subjects. */
export interface HeldList {
  subjects: HeldSubject[];
  /** The cursor of the next page; "" on the last. */
  next: string;
  /**
   * The tenant's held subjects by "flow:kind" (such as "login:account"),
   * every page's, not this page's alone; {} when none is held.
   */
  counts: Record<string, number>;
}

/** The body of POST /v1/admin/reset-held: free the held subjects of a flow, those named or all the index lists. */
export interface HeldResetRequest {
  /** The flow. Required. */
  flow: string;
  /** "account" or "ip"; both when left out. */
  kind?: "account" | "ip" | (string & {}) | undefined;
  /** Identifiers as the list gives them (at most 1000); none: every held subject of the flow. */
  subjects?: string[] | undefined;
  /** Goes to the audit log line; 1 to 200 bytes, no identifier. Required by tollgate. */
  reason: string;
  /** Count what would be reset and change nothing. */
  dry_run?: boolean | undefined;
}

/** The answer to resetHeld. */
export interface HeldReset {
  /** The index's entries the request selected. */
  matched: number;
  /** The subjects reset (0 on a dry run), and the store keys deleted. */
  reset: number;
  deleted: number;
  dry_run: boolean;
}

/** The fields of the reset-held body, in Go's struct (wire) order. */
export const heldResetFields = [
  ["flow", true],
  ["kind", false],
  ["subjects", false],
  ["reason", true],
  ["dry_run", false],
] as const;

/** The shapes of the held answers. */
export const heldShapes = {
  held: {
    subjects: [
      {
        subject: "string",
        flow: "string",
        kind: "string",
        rule: "string",
        reason: "string",
        wait_ms: "int",
        over: "bool",
        since: "string",
        expires_in_ms: "int",
      },
    ],
    next: "string",
    counts: ["map", "int"],
  },
  heldReset: { matched: "int", reset: "int", deleted: "int", dry_run: "bool" },
} as const satisfies Record<string, Shape>;
