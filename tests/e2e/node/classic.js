// The Node.js client at a classic Machiavelli table (client.js's "classic" mode): join a
// friendly classic table by its invite code, receive the classic snapshot, draw on its turn,
// see the events up to the next player's action. Prints one line per step, then OK:
//   assigned TABLE players=N
//   classic snapshot seq=S seat=SEAT_Pn hand=H own=H stock=K
//   event KIND seq=S player=SEAT_Pn cards=C      (a drawn card's face only to its drawer, P5)
//   ack ID arrival=A
"use strict";

function play(grpc, v1, address, player, code, fail) {
  const creds = grpc.credentials.createInsecure();
  const gateway = new v1.GatewayService(address, creds);
  const agora = new v1.MatchmakingService(address, creds); // relayed by the gateway
  gateway.login({ player }, (err, reply) => {
    if (err) fail("login: " + err.message);
    const md = new grpc.Metadata();
    md.set("authorization", "Bearer " + reply.token);
    const join = agora.joinFriendlyTable({ inviteCode: code }, md);
    let assigned = false;
    join.on("data", (msg) => {
      if (msg.update.kind !== "assignment" || assigned) return;
      assigned = true;
      const a = msg.update.assignment;
      console.log("assigned " + a.tableId + " players=" + a.playerIds.length);
      join.cancel();
      atTable(grpc, gateway, md, a.tableId, fail);
    });
    join.on("error", (e) => { if (!assigned) fail("join: " + e.message); });
  });
}

function atTable(grpc, gateway, md, tableId, fail) {
  const call = gateway.play(md);
  const seen = { snapshot: false, ack: false, drew: false, other: false };
  let me = null;
  let drawn = false;
  const draw = () => {
    if (drawn) return;
    drawn = true;
    call.write({ action: { clientActionId: "node-c1", classicAction: { draw: {} } } });
  };
  const beat = setInterval(() => call.write({ heartbeat: {} }), 1000); // a sign of life (A1)
  call.on("data", (msg) => {
    if (msg.kind === "classicSnapshot") {
      const view = msg.classicSnapshot.view;
      me = view.viewer;
      const mine = view.seats.find((s) => s.seat === me);
      if (!mine || mine.handCount !== view.hand.length) fail("own hand != own count");
      seen.snapshot = true;
      console.log("classic snapshot seq=" + msg.classicSnapshot.seq + " seat=" + me +
                  " hand=" + view.hand.length + " own=" + mine.handCount +
                  " stock=" + view.stockCount);
      if (view.turn === me) draw();
    } else if (msg.kind === "event") {
      const ev = msg.event;
      console.log("event " + ev.kind + " seq=" + ev.seq + " player=" + ev.player +
                  " cards=" + ev.cards.length);
      if (ev.classicKind === "CLASSIC_EVENT_KIND_DREW" && ev.player === me &&
          ev.cards.length === 1) seen.drew = true;
      if (ev.classicKind === "CLASSIC_EVENT_KIND_TURN" && ev.player === me) draw();
      // then what another player did on their turn (a drawn card shows as none)
      if (seen.drew && ev.player !== me && ev.classicKind !== "CLASSIC_EVENT_KIND_TURN") {
        seen.other = true;
      }
    } else if (msg.kind === "ack") {
      if (msg.ack.clientActionId === "node-c1") seen.ack = true;
      console.log("ack " + msg.ack.clientActionId + " arrival=" + msg.ack.arrivalIndex);
    } else if (msg.kind === "refused") {
      fail("refused " + msg.refused.refusal.code);
    } else if (msg.kind === "snapshot") {
      fail("a Machiavelox snapshot at a classic table");
    }
    if (seen.snapshot && seen.ack && seen.drew && seen.other) {
      console.log("OK");
      clearInterval(beat);
      call.end();
      process.exit(0);
    }
  });
  call.on("error", (e) => fail("stream: " + e.message));
  call.write({ join: { tableId, lastSeq: 0 } });
}

module.exports = { play };
