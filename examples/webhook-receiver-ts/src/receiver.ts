/**
 * The request listener of an endpoint for tollgate's events: what every
 * receiver must do. It reads the raw body, verifies it with
 * `verifyWebhook`, answers 400 to anything that does not verify, handles
 * each event once although delivery is at least once (it dedupes by
 * webhook-id, in memory here; use your database), and answers 204 only once
 * the event is handled, so that a failure is retried.
 */

import type { IncomingMessage, ServerResponse } from "node:http";
import { verifyWebhook, WebhookVerificationError, type WebhookEvent } from "@tollgate/client";

/** The most read of a request: tollgate's events are well under 64 KiB. */
const maxBody = 1 << 20;

/** How long an id is remembered: longer than tollgate goes on retrying an event. */
const dedupeForMs = 72 * 3600 * 1000;

/** The options of {@link createReceiver}. */
export interface ReceiverOptions {
  /** The clock, in ms since the epoch. Default: Date.now. */
  now?: () => number;
}

/**
 * A request listener that hands each verified event to handle, once per
 * webhook-id; a rejection from handle answers 500, so that tollgate retries
 * it. Throws when secret is not a whsec_ secret.
 */
export function createReceiver(
  secret: string,
  handle: (e: WebhookEvent) => Promise<void>,
  options: ReceiverOptions = {},
): (req: IncomingMessage, res: ServerResponse) => void {
  try {
    verifyWebhook(secret, {}, "");
  } catch (e) {
    if (e instanceof WebhookVerificationError && e.kind === "secret") throw new Error("the secret must be the endpoint's whsec_ secret");
  }
  const now = options.now ?? Date.now;
  const seen = new Map<string, { done: boolean; expires: number }>();

  const claim = (id: string): "new" | "busy" | "done" => {
    const t = now();
    for (const [k, s] of seen) if (t > s.expires) seen.delete(k); // a real receiver keeps ids in its database
    const s = seen.get(id);
    if (s !== undefined) return s.done ? "done" : "busy";
    seen.set(id, { done: false, expires: t + dedupeForMs });
    return "new";
  };

  return (req, res) => {
    if (req.method !== "POST" || req.url !== "/tollgate-events") return problem(res, 404, "POST /tollgate-events only");
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > maxBody) over = true;
      else chunks.push(c);
    });
    req.on("error", () => res.destroy());
    req.on("end", () => {
      if (over) return problem(res, 413, "the body is over 1 MiB");
      let event: WebhookEvent;
      try {
        event = verifyWebhook(secret, req.headers, Buffer.concat(chunks), { now: now() });
      } catch {
        return problem(res, 400, "the webhook did not verify"); // never act on it, and tell the sender nothing of why
      }
      switch (claim(event.id)) {
        case "done":
          return void res.writeHead(204).end(); // a redelivery: it was handled
        case "busy":
          return problem(res, 409, "this event is being handled"); // tollgate retries
        case "new":
      }
      Promise.resolve()
        .then(() => handle(event)) // a handler that throws at once is a failure too
        .then(
          () => {
            seen.set(event.id, { done: true, expires: now() + dedupeForMs });
            res.writeHead(204).end();
          },
          () => {
            seen.delete(event.id);
            problem(res, 500, "the event could not be handled; retry");
          },
        );
    });
  };
}

/** Writes an RFC 9457 problem document. */
function problem(res: ServerResponse, status: number, detail: string): void {
  const titles: Record<number, string> = { 400: "Bad Request", 404: "Not Found", 409: "Conflict", 413: "Content Too Large", 500: "Internal Server Error" };
  res.writeHead(status, { "content-type": "application/problem+json" });
  res.end(JSON.stringify({ type: "about:blank", title: titles[status] ?? "Error", status, detail }) + "\n");
}
