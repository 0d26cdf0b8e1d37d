/**
 * Receives tollgate's events on node:http:
 *
 *     TOLLGATE_WEBHOOK_SECRET=whsec_... LISTEN=127.0.0.1:8091 npm start
 *
 * and point a tollgate endpoint at http://127.0.0.1:8091/tollgate-events.
 * It logs each event's type, flow, rule and id, never its subject (an
 * account or a phone number) or ref.
 */

import { createServer } from "node:http";
import { createReceiver } from "./receiver.js";

const [host, port] = (process.env["LISTEN"] ?? "127.0.0.1:8091").split(/:(?=[^:]*$)/) as [string, string | undefined];
const receiver = createReceiver(process.env["TOLLGATE_WEBHOOK_SECRET"] ?? "", async (e) => {
  // Act here: e.data.ref is your own user id, as you passed it to check,
  // report or send; e.data.subject the account or destination.
  switch (e.type) {
    case "login.new_device": // "was this you?" to the account's owner
    case "account.under_attack": // tell the security team
    default:
      console.log(JSON.stringify({ msg: "tollgate event", type: e.type, flow: e.data.flow, rule: e.data.rule, id: e.id }));
  }
});
const server = createServer(receiver);
server.listen(Number(port ?? 8091), host, () => {
  const a = server.address();
  if (a !== null && typeof a === "object") console.log(`listening on http://${a.address}:${a.port}/tollgate-events`);
});
for (const sig of ["SIGINT", "SIGTERM"] as const) process.on(sig, () => server.close());
