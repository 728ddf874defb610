// A Node.js client of the Machiavelox gateway, loading the .proto files as they are:
// log in, join a table, receive the snapshot, draw a card, see the event and the ack.
// Usage: node client.js GATEWAY_ADDRESS PROTO_DIR PLAYER TABLE_ID
"use strict";
const grpc = require("@grpc/grpc-js");
const loader = require("@grpc/proto-loader");

const [address, protoDir, player, tableId] = process.argv.slice(2);
const def = loader.loadSync("machiavelox/v1/gateway.proto", {
  includeDirs: [protoDir], keepCase: false, longs: Number, enums: String, defaults: true,
  oneofs: true,
});
const v1 = grpc.loadPackageDefinition(def).machiavelox.v1;
const gateway = new v1.GatewayService(address, grpc.credentials.createInsecure());

function fail(why) { console.error("FAIL " + why); process.exit(1); }
setTimeout(() => fail("timed out"), 15000);

gateway.login({ player }, (err, reply) => {
  if (err) fail("login: " + err.message);
  const md = new grpc.Metadata();
  md.set("authorization", "Bearer " + reply.token);
  const call = gateway.play(md);
  const seen = { snapshot: false, ack: false, event: false };
  call.on("data", (msg) => {
    if (msg.kind === "snapshot") {
      seen.snapshot = true;
      console.log("snapshot seq=" + msg.snapshot.seq + " hand=" + msg.snapshot.view.hand.length);
      call.write({ action: { clientActionId: "node-1", action: { draw: {} } } });
    } else if (msg.kind === "ack") {
      seen.ack = msg.ack.clientActionId === "node-1";
      console.log("ack arrival=" + msg.ack.arrivalIndex);
    } else if (msg.kind === "refused") {
      fail("refused " + msg.refused.refusal.code);
    } else if (msg.kind === "event") {
      console.log("event " + msg.event.kind + " seq=" + msg.event.seq +
                  " cards=" + msg.event.cards.length);
      if (msg.event.kind === "drew" && msg.event.cards.length === 1) seen.event = true;
    }
    if (seen.snapshot && seen.ack && seen.event) {
      console.log("OK");
      call.end();
      process.exit(0);
    }
  });
  call.on("error", (e) => fail("stream: " + e.message));
  call.write({ join: { tableId, lastSeq: 0 } });
});
