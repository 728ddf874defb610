// A Node.js client of the Machiavelox gateway, loading the .proto files as they are:
// log in, join a table, receive the snapshot, draw a card, see the event and the ack.
// With "ride-out", it also rides out an outage of the table's shard as an app should
// (docs/protocol.md, "Outages"): an in-band `table/unavailable` (no action id) is not an
// error, the session stays open and resumes by itself; the first event after the outage is
// `interrupted`; then it draws again. A `table/journal` refusal means "try again shortly".
// With "classic", the 4th argument is a friendly classic table's invite code: it joins the
// table by code through the gateway's agorà (JoinFriendlyTable, to the Assignment), receives
// its `classicSnapshot` (its own hand only), draws on its turn (`classicAction: {draw: {}}`,
// docs/protocol.md, "Playing a classic table through the gateway") and sees the events.
// Usage: node client.js GATEWAY_ADDRESS PROTO_DIR PLAYER TABLE_ID [ride-out]
//        node client.js GATEWAY_ADDRESS PROTO_DIR PLAYER INVITE_CODE classic
"use strict";
const grpc = require("@grpc/grpc-js");
const loader = require("@grpc/proto-loader");

const [address, protoDir, player, tableId, mode] = process.argv.slice(2);
const rideOut = mode === "ride-out";
const def = loader.loadSync(["machiavelox/v1/gateway.proto", "machiavelox/v1/matchmaking.proto"], {
  includeDirs: [protoDir], keepCase: false, longs: Number, enums: String, defaults: true,
  oneofs: true,
});
const v1 = grpc.loadPackageDefinition(def).machiavelox.v1;
const gateway = new v1.GatewayService(address, grpc.credentials.createInsecure());

function fail(why) { console.error("FAIL " + why); process.exit(1); }
setTimeout(() => fail("timed out"), rideOut ? 90000 : mode === "classic" ? 30000 : 15000);

if (mode === "classic") {
  require("./classic").play(grpc, v1, address, player, tableId, fail);
} else gateway.login({ player }, (err, reply) => {
  if (err) fail("login: " + err.message);
  const md = new grpc.Metadata();
  md.set("authorization", "Bearer " + reply.token);
  const call = gateway.play(md);
  const seen = { snapshot: false, ack: false, event: false, unavailable: false,
                 interrupted: false, again: false };
  const draw = (id) => call.write({ action: { clientActionId: id, action: { draw: {} } } });
  call.on("data", (msg) => {
    if (msg.kind === "snapshot") {
      seen.snapshot = true;
      console.log("snapshot seq=" + msg.snapshot.seq + " hand=" + msg.snapshot.view.hand.length);
      draw("node-1");
    } else if (msg.kind === "ack") {
      if (msg.ack.clientActionId === "node-1") seen.ack = true;
      if (msg.ack.clientActionId === "node-2") seen.again = true;
      console.log("ack " + msg.ack.clientActionId + " arrival=" + msg.ack.arrivalIndex);
    } else if (msg.kind === "refused") {
      const code = msg.refused.refusal.code;
      if (rideOut && code === "table/unavailable" && !msg.refused.clientActionId) {
        if (!seen.unavailable) console.log("unavailable");
        seen.unavailable = true;
      } else if (rideOut && code === "table/journal") {
        setTimeout(() => draw(msg.refused.clientActionId), 500);
      } else {
        fail("refused " + code);
      }
    } else if (msg.kind === "event") {
      console.log("event " + msg.event.kind + " seq=" + msg.event.seq +
                  " cards=" + msg.event.cards.length);
      if (msg.event.kind === "drew" && msg.event.cards.length === 1) seen.event = true;
      if (msg.event.kind === "interrupted") {
        seen.interrupted = true;
        draw("node-2");
      }
    }
    const done = seen.snapshot && seen.ack && seen.event &&
      (!rideOut || (seen.unavailable && seen.interrupted && seen.again));
    if (done) {
      console.log("OK");
      call.end();
      process.exit(0);
    }
  });
  call.on("error", (e) => fail("stream: " + e.message));
  call.write({ join: { tableId, lastSeq: 0 } });
});
