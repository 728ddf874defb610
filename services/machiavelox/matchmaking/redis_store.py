"""The agorà's state in one Redis shared by every matchmaking replica (`store.AgoraStore`),
selected by MACHIAVELOX_MATCHMAKING_REDIS_URL (issue 13 item 4; docs/architecture.md, "The
agorà").

Every method is one Lua script, run by Redis atomically: two replicas never see half of a
change, and a condition checked is still true when the change is made (a group is formed only
if its three tickets all still wait: exactly one replica forms it). The scripts only keep the
records; the decisions (who matches whom, which shard) are the caller's, in Python, once.

Keys (`P` is MACHIAVELOX_MATCHMAKING_KEY_PREFIX):
- `P:p:<player>`: where the player is (`q <ticket>`, `l <code>`, `t ` being seated, `t <table>`);
- `P:t:<ticket>`: a ticket (hash: player, ordinal, at, seq, watch, status, placement, and
  once assigned table, shard, players); `P:q`: the waiting tickets (hash ticket -> JSON, one
  HGETALL for the matcher, ordered by (at, seq));
- `P:w:<watch>`: what a stream follows (`["q", ticket]` or `["l", code, player]`);
  `P:alive`: sorted set watch -> attached until (ms): kept alive by the replica holding the
  stream (`keepalive`), swept when it lapses (`sweep`);
- `P:l:<code>`: a friendly lobby (hash: kind, creator, created, players, table, shard,
  placing, `w:<player>` each member's stream); `P:lopen:<creator>`, `P:lage` (lobbies
  without a table by creation time), `P:lready` (full ones without a table), `P:ltable:<table>`;
- `P:pl:<placement>`: a placement (hash: its `store.Placement` as JSON, owner); `P:leases`:
  sorted set placement -> lease end (ms);
- `P:tb:<table>`: a seated table (its players and tickets); `P:tables`: the seated tables;
- `P:lseats`: seats taken at lobbies without a table; `P:seq`; `P:matcher`: the matching
  lease (`lead`: one replica matches at a time; the others only serve streams).

Outcomes for streams held by other replicas (a ticket assigned, cancelled, replaced; a lobby
placed or expired) are published on `P:events` by the script that makes them; every replica
subscribes (`start`) and finishes its own streams. Pub/sub delivers at most once: a replica
that was not subscribed at that moment lets its stream wait on; the app's re-attach (or the
next Waiting update's poll: `follow`) finds the ticket as it is.

Time is Redis's (`clock`, from TIME, advanced by this process's monotonic clock between
readings): tickets' ages, leases and lobby lifetimes are comparable between replicas without
comparing their clocks. Redis Cluster: every key of one agorà is in one slot only if the
prefix carries a hash tag (`{mxm}:`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError, ResponseError

from machiavelox.rules import MatchKind

from .queue import (
    Lobby,
    Refused,
    Spot,
    Ticket,
    UnknownCode,
    lobby_full,
    open_lobby_message,
    spot_refusal,
)
from .store import (
    ATTACH_MS,
    LEASE_MS,
    Cancelled,
    Group,
    NotYours,
    Outcome,
    Placement,
    Seated,
    Snapshot,
    StoreUnavailableError,
    TicketState,
    UnknownTicket,
    Unplaced,
)

log = logging.getLogger(__name__)

_SWEEP_BATCH = 1_000
MAX_CONNECTIONS = 32  # to Redis, per replica
MAX_BATCH = 500  # items of one "many" script call
BATCH_WINDOW_S = 0.001  # while calls come this often, they go together (one call a window)
_RESYNC_S = 10.0  # how often the clock is read from Redis again
_CODE_TRIES = 8  # codes drawn per lobby creation (one free is enough)

# Shared by every script: ARGV[1] is the prefix; KEYS[1] (the queue) routes the call.
_PRELUDE = r"""
local P = ARGV[1]
local function k(...) return P .. table.concat({...}, ':') end
local function list(v) if not v or v == '' then return {} end return cjson.decode(v) end
local function publish(watch, what)
  if watch and watch ~= '' then
    redis.call('PUBLISH', k('events'), cjson.encode({watch, what}))
  end
end
local function attached(watch, now)
  if not watch or watch == '' then return false end
  local till = redis.call('ZSCORE', k('alive'), watch)
  return till and tonumber(till) >= now
end
local function forget_watch(watch)
  if watch and watch ~= '' then
    redis.call('ZREM', k('alive'), watch)
    redis.call('DEL', k('w', watch))
  end
end
local function remove_waiting(tid)
  -- a waiting ticket leaves the queue: its player is free
  local player = redis.call('HGET', k('t', tid), 'player')
  forget_watch(redis.call('HGET', k('t', tid), 'watch'))
  redis.call('DEL', k('t', tid))
  redis.call('HDEL', k('q'), tid)
  if player and redis.call('GET', k('p', player)) == 'q ' .. tid then
    redis.call('DEL', k('p', player))
  end
  return player
end
local function leave(code, player)
  -- give up a friendly seat (not once the table is created or being created)
  local l = k('l', code)
  if redis.call('EXISTS', l) == 0 then return false end
  local placed = redis.call('HGET', l, 'table')
  local placing = redis.call('HGET', l, 'placing')
  if (placed and placed ~= '') or (placing and placing ~= '') then return false end
  local players = list(redis.call('HGET', l, 'players'))
  local at = nil
  for i, p in ipairs(players) do if p == player then at = i end end
  if not at then return false end
  table.remove(players, at)
  redis.call('HSET', l, 'players', cjson.encode(players))
  if redis.call('GET', k('p', player)) == 'l ' .. code then redis.call('DEL', k('p', player)) end
  local watch = redis.call('HGET', l, 'w:' .. player)
  forget_watch(watch)
  redis.call('HDEL', l, 'w:' .. player)
  redis.call('DECR', k('lseats'))
  redis.call('SREM', k('lready'), code)
  return true, watch
end
local function placing(code)
  -- the lobby's table is being created (not created yet)
  local h = redis.call('HMGET', k('l', code), 'placing', 'table')
  return h[1] and h[1] ~= '' and (not h[2] or h[2] == '')
end
local function lobby_view(code)
  local l = k('l', code)
  local h = redis.call('HGETALL', l)
  local out = {code = code}
  for i = 1, #h, 2 do out[h[i]] = h[i + 1] end
  return out
end
"""

# The scripts written for one item (`one`, its arguments in A) and called for many: ARGV[2] is
# the number of arguments of one item, the items follow; the answer is the list of theirs.
_MANY = r"""
local function many(one)
  local out = {}
  local width = tonumber(ARGV[2])
  for i = 3, #ARGV, width do table.insert(out, one(unpack(ARGV, i, i + width - 1))) end
  return cjson.encode(out)
end
"""

# Item: ticket, player, ordinal, at, watch, attached until
_ADD_TICKET = _PRELUDE + _MANY + r"""
local function one(...)
  local A = {...}
  local spot = redis.call('GET', k('p', A[2]))
  if spot then return ({'spot', spot}) end
  local seq = redis.call('INCR', k('seq'))
  redis.call('SET', k('p', A[2]), 'q ' .. A[1])
  redis.call('HSET', k('t', A[1]), 'player', A[2], 'ordinal', A[3], 'at', A[4],
             'seq', seq, 'watch', A[5], 'status', 'waiting')
  redis.call('HSET', k('q'), A[1], cjson.encode({A[2], A[3], A[4], seq}))
  redis.call('ZADD', k('alive'), A[6], A[5])
  redis.call('SET', k('w', A[5]), cjson.encode({'q', A[1]}))
  return ({'ok'})
end
return many(one)
"""

# ARGV: P, ticket, player, watch, attached until
_ATTACH = _PRELUDE + r"""
local t = k('t', ARGV[2])
if redis.call('EXISTS', t) == 0 then return cjson.encode({'unknown'}) end
if redis.call('HGET', t, 'player') ~= ARGV[3] then return cjson.encode({'notyours'}) end
local old = redis.call('HGET', t, 'watch') or ''
if old ~= ARGV[4] then
  forget_watch(old)
  publish(old, 'replaced')
end
redis.call('HSET', t, 'watch', ARGV[4])
redis.call('ZADD', k('alive'), ARGV[5], ARGV[4])
redis.call('SET', k('w', ARGV[4]), cjson.encode({'q', ARGV[2]}))
local h = redis.call('HGETALL', t)
local out = {}
for i = 1, #h, 2 do out[h[i]] = h[i + 1] end
return cjson.encode({'ok', out, old})
"""

# Item: ticket, watch
_DETACH = _PRELUDE + _MANY + r"""
local function one(...)
  local A = {...}
  redis.call('ZREM', k('alive'), A[2])
  redis.call('DEL', k('w', A[2]))
  local t = k('t', A[1])
  if redis.call('HGET', t, 'watch') ~= A[2] then return ({}) end
  redis.call('HSET', t, 'watch', '')
  if redis.call('HGET', t, 'status') ~= 'waiting' then return ({}) end
  local h = redis.call('HMGET', t, 'player', 'ordinal', 'at')
  remove_waiting(A[1])
  return (h)
end
return many(one)
"""

# ARGV: P, ticket (or a friendly join's), player
_CANCEL = _PRELUDE + r"""
local joined = redis.call('GET', k('w', ARGV[2]))
if joined then
  local w = cjson.decode(joined)
  if w[1] == 'l' then
    if w[3] ~= ARGV[3] then return cjson.encode({'notyours'}) end
    local ok, watch = leave(w[2], w[3])
    if not ok then return cjson.encode({'no'}) end
    publish(watch, 'cancelled')
    return cjson.encode({'lobby', watch or ''})
  end
end
local t = k('t', ARGV[2])
if redis.call('EXISTS', t) == 0 then return cjson.encode({'no'}) end
if redis.call('HGET', t, 'player') ~= ARGV[3] then return cjson.encode({'notyours'}) end
if redis.call('HGET', t, 'status') ~= 'waiting' then return cjson.encode({'no'}) end
local watch = redis.call('HGET', t, 'watch')
remove_waiting(ARGV[2])
publish(watch, 'cancelled')
return cjson.encode({'queue', watch or ''})
"""

# ARGV: P, owner, lease until, then per group: placement, 3 tickets, 3 seats
_FORM = _PRELUDE + r"""
local formed = {}
local i = 4
while i <= #ARGV do
  local pid = ARGV[i]
  local tickets = {ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]}
  local seats = {ARGV[i + 4], ARGV[i + 5], ARGV[i + 6]}
  i = i + 7
  local waiting = true
  for _, tid in ipairs(tickets) do
    if redis.call('HEXISTS', k('q'), tid) == 0 then waiting = false end
  end
  if waiting then
    for _, tid in ipairs(tickets) do
      redis.call('HDEL', k('q'), tid)
      redis.call('HSET', k('t', tid), 'status', 'placing', 'placement', pid)
      local player = redis.call('HGET', k('t', tid), 'player')
      redis.call('SET', k('p', player), 't ')
    end
    redis.call('HSET', k('pl', pid), 'owner', ARGV[2], 'placement', cjson.encode({
      placement_id = pid, players = seats, kind = 'single', competitive = true,
      tickets = tickets, code = '', state = 'new', shard_id = '', table_id = '',
      refused = {}}))
    redis.call('ZADD', k('leases'), ARGV[3], pid)
    table.insert(formed, pid)
  end
end
return cjson.encode(formed)
"""

# ARGV: P, creator, kind, now, candidate codes...
_CREATE_LOBBY = _PRELUDE + r"""
local open = redis.call('GET', k('lopen', ARGV[2]))
if open then
  local kind = redis.call('HGET', k('l', open), 'kind')
  if kind == ARGV[3] then return cjson.encode({'old', lobby_view(open)}) end
  return cjson.encode({'open', kind})
end
for i = 5, #ARGV do
  local code = ARGV[i]
  if redis.call('EXISTS', k('l', code)) == 0 then
    redis.call('HSET', k('l', code), 'kind', ARGV[3], 'creator', ARGV[2], 'created', ARGV[4],
               'players', '[]', 'table', '', 'shard', '', 'placing', '')
    redis.call('SET', k('lopen', ARGV[2]), code)
    redis.call('ZADD', k('lage'), ARGV[4], code)
    return cjson.encode({'new', lobby_view(code)})
  end
end
return cjson.encode({'nocode'})
"""

# ARGV: P, code, player, watch, attached until
_JOIN_LOBBY = _PRELUDE + r"""
local l = k('l', ARGV[2])
if redis.call('EXISTS', l) == 0 then return cjson.encode({'unknown'}) end
local players = list(redis.call('HGET', l, 'players'))
local member = false
for _, p in ipairs(players) do if p == ARGV[3] then member = true end end
if not member then
  if #players >= 3 then return cjson.encode({'full'}) end
  local spot = redis.call('GET', k('p', ARGV[3]))
  if spot then return cjson.encode({'spot', spot}) end
  table.insert(players, ARGV[3])
  redis.call('HSET', l, 'players', cjson.encode(players))
  redis.call('SET', k('p', ARGV[3]), 'l ' .. ARGV[2])
  redis.call('INCR', k('lseats'))
  if #players == 3 then redis.call('SADD', k('lready'), ARGV[2]) end
end
local old = redis.call('HGET', l, 'w:' .. ARGV[3]) or ''
if old ~= ARGV[4] then
  forget_watch(old)
  publish(old, 'replaced')
end
redis.call('HSET', l, 'w:' .. ARGV[3], ARGV[4])
redis.call('ZADD', k('alive'), ARGV[5], ARGV[4])
redis.call('SET', k('w', ARGV[4]), cjson.encode({'l', ARGV[2], ARGV[3]}))
return cjson.encode({'ok', lobby_view(ARGV[2]), old})
"""

# ARGV: P, code, player, watch
_LEAVE_LOBBY = _PRELUDE + r"""
if redis.call('HGET', k('l', ARGV[2]), 'w:' .. ARGV[3]) ~= ARGV[4] then
  forget_watch(ARGV[4])
  return 0
end
if leave(ARGV[2], ARGV[3]) then return 1 end
if placing(ARGV[2]) then
  redis.call('ZADD', k('alive'), 0, ARGV[4])  -- lapsed: the sweep frees the seat after it
else
  forget_watch(ARGV[4])
end
return 0
"""

# ARGV: P, cutoff (created at or before it: expired)
_EXPIRE_LOBBIES = _PRELUDE + r"""
local out = {}
for _, code in ipairs(redis.call('ZRANGEBYSCORE', k('lage'), '-inf', ARGV[2])) do
  local l = k('l', code)
  local view = lobby_view(code)
  if redis.call('EXISTS', l) == 0 or (view.table and view.table ~= '') then
    redis.call('ZREM', k('lage'), code)
  elseif not view.placing or view.placing == '' then
    local watches = {}
    for _, player in ipairs(list(view.players)) do
      if redis.call('GET', k('p', player)) == 'l ' .. code then
        redis.call('DEL', k('p', player))
      end
      local watch = view['w:' .. player]
      if watch then
        table.insert(watches, watch)
        forget_watch(watch)
        publish(watch, 'expired')
      end
      redis.call('DECR', k('lseats'))
    end
    if redis.call('GET', k('lopen', view.creator)) == code then
      redis.call('DEL', k('lopen', view.creator))
    end
    redis.call('DEL', l)
    redis.call('ZREM', k('lage'), code)
    redis.call('SREM', k('lready'), code)
    table.insert(out, {view, watches})
  end
end
return cjson.encode(out)
"""

# ARGV: P, owner, lease until, placement id base
_CLAIM_LOBBIES = _PRELUDE + r"""
local out = {}
local n = 0
for _, code in ipairs(redis.call('SMEMBERS', k('lready'))) do
  redis.call('SREM', k('lready'), code)
  local view = lobby_view(code)
  local players = list(view.players)
  if view.kind and #players == 3 and view.table == '' and view.placing == '' then
    n = n + 1
    local pid = ARGV[4] .. string.format('%02x', n)
    redis.call('HSET', k('l', code), 'placing', pid)
    local placement = {placement_id = pid, players = players, kind = view.kind,
      competitive = false, tickets = {}, code = code, state = 'new', shard_id = '',
      table_id = '', refused = {}}
    redis.call('HSET', k('pl', pid), 'owner', ARGV[2], 'placement', cjson.encode(placement))
    redis.call('ZADD', k('leases'), ARGV[3], pid)
    table.insert(out, placement)
  end
end
return cjson.encode(out)
"""

# Item: placement id, owner, lease until, placement JSON
_PROGRESS = _PRELUDE + _MANY + r"""
local function one(...)
  local A = {...}
  if redis.call('HGET', k('pl', A[1]), 'owner') ~= A[2] then return 0 end
  redis.call('HSET', k('pl', A[1]), 'placement', A[4])
  redis.call('ZADD', k('leases'), A[3], A[1])
  return 1
end
return many(one)
"""

# Item: placement id, owner, table, shard
_PLACED = _PRELUDE + _MANY + r"""
local function one(...)
  local A = {...}
  local pl = k('pl', A[1])
  if redis.call('HGET', pl, 'owner') ~= A[2] then return ({'no'}) end
  local placement = cjson.decode(redis.call('HGET', pl, 'placement'))
  local tid, shard = A[3], A[4]
  local players = placement.players
  local seated = {'seated', tid, shard, players}
  local watches = {}
  local tickets = list(cjson.encode(placement.tickets))
  if placement.code ~= '' then
    local l = k('l', placement.code)
    if redis.call('EXISTS', l) == 1 then
      redis.call('HSET', l, 'table', tid, 'shard', shard, 'placing', '')
      redis.call('ZREM', k('lage'), placement.code)
      local creator = redis.call('HGET', l, 'creator')
      if redis.call('GET', k('lopen', creator)) == placement.code then
        redis.call('DEL', k('lopen', creator))
      end
      redis.call('SET', k('ltable', tid), placement.code)
      redis.call('DECRBY', k('lseats'), #players)
      for _, player in ipairs(players) do
        local watch = redis.call('HGET', l, 'w:' .. player)
        if watch then table.insert(watches, watch) end
      end
    end
  else
    for _, t in ipairs(tickets) do
      local key = k('t', t)
      if redis.call('EXISTS', key) == 1 then
        redis.call('HSET', key, 'status', 'assigned', 'table', tid, 'shard', shard,
                   'players', cjson.encode(players))
        local watch = redis.call('HGET', key, 'watch')
        if watch and watch ~= '' then table.insert(watches, watch) end
      end
    end
  end
  for _, player in ipairs(players) do redis.call('SET', k('p', player), 't ' .. tid) end
  redis.call('HSET', k('tb', tid), 'players', cjson.encode(players),
             'tickets', cjson.encode(tickets))
  redis.call('SADD', k('tables'), tid)
  for _, watch in ipairs(watches) do publish(watch, seated) end
  redis.call('DEL', pl)
  redis.call('ZREM', k('leases'), A[1])
  return ({'ok', watches})
end
return many(one)
"""

# Item: placement id, owner, now
_UNPLACED = _PRELUDE + _MANY + r"""
local function one(...)
  local A = {...}
  local pl = k('pl', A[1])
  if redis.call('HGET', pl, 'owner') ~= A[2] then return ({'no'}) end
  local placement = cjson.decode(redis.call('HGET', pl, 'placement'))
  local now = tonumber(A[3])
  local requeued, freed = {}, {}
  if placement.code ~= '' then
    local l = k('l', placement.code)
    if redis.call('EXISTS', l) == 1 then
      redis.call('HSET', l, 'placing', '')
      redis.call('SADD', k('lready'), placement.code)
    end
  else
    local kept = {}
    for _, tid in ipairs(list(cjson.encode(placement.tickets))) do
      local t = k('t', tid)
      if redis.call('EXISTS', t) == 1 then
        local h = redis.call('HMGET', t, 'player', 'ordinal', 'at', 'seq', 'watch')
        if attached(h[5], now) then
          redis.call('HSET', t, 'status', 'waiting', 'placement', '')
          redis.call('HSET', k('q'), tid, cjson.encode({h[1], h[2], h[3], tonumber(h[4])}))
          redis.call('SET', k('p', h[1]), 'q ' .. tid)
          kept[h[1]] = true
          table.insert(requeued, tid)
        else
          forget_watch(h[5])
          redis.call('DEL', t)
        end
      end
    end
    for _, player in ipairs(placement.players) do
      if not kept[player] then
        if redis.call('GET', k('p', player)) == 't ' then redis.call('DEL', k('p', player)) end
        table.insert(freed, player)
      end
    end
  end
  redis.call('DEL', pl)
  redis.call('ZREM', k('leases'), A[1])
  return ({'ok', requeued, freed})
end
return many(one)
"""

# ARGV: P, owner, now, lease until
_STALE = _PRELUDE + r"""
local out = {}
for _, pid in ipairs(redis.call('ZRANGEBYSCORE', k('leases'), '-inf', '(' .. ARGV[3])) do
  local pl = k('pl', pid)
  local placement = redis.call('HGET', pl, 'placement')
  if placement then
    redis.call('HSET', pl, 'owner', ARGV[2])
    redis.call('ZADD', k('leases'), ARGV[4], pid)
    table.insert(out, placement)
  else
    redis.call('ZREM', k('leases'), pid)
  end
end
return cjson.encode(out)
"""

# ARGV: P, table
_RELEASE = _PRELUDE + r"""
local tb = k('tb', ARGV[2])
if redis.call('EXISTS', tb) == 0 then return cjson.encode({}) end
local players = list(redis.call('HGET', tb, 'players'))
for _, player in ipairs(players) do
  if redis.call('GET', k('p', player)) == 't ' .. ARGV[2] then redis.call('DEL', k('p', player)) end
end
for _, tid in ipairs(list(redis.call('HGET', tb, 'tickets'))) do
  forget_watch(redis.call('HGET', k('t', tid), 'watch'))
  redis.call('DEL', k('t', tid))
end
local code = redis.call('GET', k('ltable', ARGV[2]))
if code then
  local view = lobby_view(code)
  for _, player in ipairs(list(view.players)) do forget_watch(view['w:' .. player]) end
  redis.call('DEL', k('l', code))
  redis.call('DEL', k('ltable', ARGV[2]))
end
redis.call('DEL', tb)
redis.call('SREM', k('tables'), ARGV[2])
return cjson.encode(players)
"""

# ARGV: P, owner, attached until, lease until, number of watches, watches..., placements...
# Returns the counts, and the outcome of every watch whose ticket or seat has moved on (what
# pub/sub said, or would have said to a replica that was not subscribed then).
_KEEPALIVE = _PRELUDE + r"""
local n = tonumber(ARGV[5])
local moved = {}
for i = 6, 5 + n do
  local watch = ARGV[i]
  redis.call('ZADD', k('alive'), 'XX', ARGV[3], watch)
  local what = redis.call('GET', k('w', watch))
  if not what then
    table.insert(moved, {watch, 'cancelled'})
  else
    local w = cjson.decode(what)
    if w[1] == 'q' then
      local h = redis.call('HMGET', k('t', w[2]), 'watch', 'status', 'table', 'shard', 'players')
      if not h[1] then
        table.insert(moved, {watch, 'cancelled'})
      elseif h[1] ~= watch then
        table.insert(moved, {watch, 'replaced'})
      elseif h[2] == 'assigned' then
        table.insert(moved, {watch, {'seated', h[3], h[4], list(h[5])}})
      end
    else
      local h = redis.call('HMGET', k('l', w[2]), 'w:' .. w[3], 'table', 'shard', 'players')
      if not h[4] then
        table.insert(moved, {watch, 'expired'})
      elseif h[1] ~= watch then
        table.insert(moved, {watch, 'replaced'})
      elseif h[2] and h[2] ~= '' then
        table.insert(moved, {watch, {'seated', h[2], h[3], list(h[4])}})
      end
    end
  end
end
for i = 6 + n, #ARGV do
  if redis.call('HGET', k('pl', ARGV[i]), 'owner') == ARGV[2] then
    redis.call('ZADD', k('leases'), 'XX', ARGV[4], ARGV[i])
  end
end
return cjson.encode({redis.call('HLEN', k('q')),
                     tonumber(redis.call('GET', k('lseats')) or '0'), moved})
"""

# ARGV: P, now, batch
_SWEEP = _PRELUDE + r"""
local gone = 0
local lapsed = redis.call('ZRANGEBYSCORE', k('alive'), '-inf', '(' .. ARGV[2], 'LIMIT', 0,
                          tonumber(ARGV[3]))
for _, watch in ipairs(lapsed) do
  local what = redis.call('GET', k('w', watch))
  local w = what and cjson.decode(what) or {}
  if w[1] == 'q' then
    local t = k('t', w[2])
    if redis.call('HGET', t, 'watch') == watch then
      if redis.call('HGET', t, 'status') == 'waiting' then
        remove_waiting(w[2])
        gone = gone + 1
      else
        redis.call('HSET', t, 'watch', '')
      end
    end
    forget_watch(watch)
  elseif w[1] == 'l' and redis.call('HGET', k('l', w[2]), 'w:' .. w[3]) == watch then
    if leave(w[2], w[3]) then
      gone = gone + 1
    elseif not placing(w[2]) then
      forget_watch(watch)
    end  -- (its table is being created: asked again at the next sweep)
  else
    forget_watch(watch)
  end
end
return gone
"""

# ARGV: P, owner, lease ms, now: the matching lease, this replica's if free or its own
_LEAD = _PRELUDE + r"""
local holder = redis.call('GET', k('matcher'))
if not holder or holder == ARGV[2] then
  redis.call('SET', k('matcher'), ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0
"""

_KINDS = {kind.value: kind for kind in MatchKind}


def _list(value: Any) -> list[Any]:
    """A JSON array from a script (cjson writes an empty one as {})."""
    return list(value) if isinstance(value, list) else []


def placement_from(data: dict[str, Any]) -> Placement:
    return Placement(data["placement_id"], tuple(_list(data["players"])), _KINDS[data["kind"]],
                     bool(data["competitive"]), tuple(_list(data["tickets"])), data["code"],
                     data["state"], data["shard_id"], data["table_id"],
                     tuple(_list(data["refused"])))


def placement_json(placement: Placement) -> str:
    return json.dumps({"placement_id": placement.placement_id,
                       "players": list(placement.players), "kind": placement.kind.value,
                       "competitive": placement.competitive,
                       "tickets": list(placement.tickets), "code": placement.code,
                       "state": placement.state, "shard_id": placement.shard_id,
                       "table_id": placement.table_id, "refused": list(placement.refused)})


def _spot(value: str) -> Spot:
    kind, _, ref = value.partition(" ")
    return Spot({"q": "queue", "l": "lobby"}.get(kind, "table"), ref)  # type: ignore[arg-type]


def _lobby(view: dict[str, str]) -> Lobby:
    return Lobby(view["code"], _KINDS[view["kind"]], view["creator"], int(view["created"]),
                 _list(json.loads(view.get("players") or "[]")), view.get("table", ""),
                 bool(view.get("placing")))


class RedisClock:
    """Redis's clock (ms since the epoch, from TIME), advanced by this process's monotonic
    clock between readings and never backwards: the one clock every replica shares."""

    def __init__(self) -> None:
        self._offset_ms: int | None = None
        self._last = 0

    def sync(self, redis_ms: int) -> None:
        self._offset_ms = redis_ms - time.monotonic_ns() // 1_000_000

    def __call__(self) -> int:
        if self._offset_ms is None:
            raise RuntimeError("the Redis clock was not read yet (RedisStore.start)")
        self._last = max(self._last, time.monotonic_ns() // 1_000_000 + self._offset_ms)
        return self._last


class _Batched:
    """The calls of one "many" script (`_MANY`) go to Redis together (at most `MAX_BATCH`
    items a call): a call that comes after a quiet moment goes at the next turn of the event
    loop (no added wait), but while calls come faster than one per `BATCH_WINDOW_S` they go
    at most once a window, together (a burst of Enqueues, the placements of a round)."""

    def __init__(self, run: Callable[..., Any], name: str) -> None:
        self.run = run
        self.name = name
        self._pending: list[tuple[tuple[str | int, ...], asyncio.Future[Any]]] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._sent_at = 0.0  # (loop time of the last call to Redis)

    async def __call__(self, *args: str | int) -> Any:
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[Any] = loop.create_future()
        self._pending.append((args, answer))
        if len(self._pending) == 1:
            wait = self._sent_at + BATCH_WINDOW_S - loop.time()
            if wait > 0:
                loop.call_later(wait, self._flush)
            else:
                loop.call_soon(self._flush)
        return await answer

    def _flush(self) -> None:
        self._sent_at = asyncio.get_running_loop().time()
        while self._pending:
            batch, self._pending = self._pending[:MAX_BATCH], self._pending[MAX_BATCH:]
            task = asyncio.ensure_future(self._send(batch))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _send(self, batch: list[tuple[tuple[str | int, ...], asyncio.Future[Any]]]
                    ) -> None:
        args = [value for item, _ in batch for value in item]
        try:
            answers = _list(json.loads(await self.run(self.name, len(batch[0][0]), *args)))
        except BaseException as err:  # (told to every caller; a cancellation included)
            for _, answer in batch:
                if not answer.done():
                    answer.set_exception(err if isinstance(err, Exception)
                                         else StoreUnavailableError("cancelled"))
            if not isinstance(err, Exception):
                raise
            return
        for (_, answer), value in zip(batch, answers, strict=True):
            if not answer.done():
                answer.set_result(value)


class RedisStore:
    shared = True

    def __init__(self, url: str, prefix: str, lobby_ttl_ms: int, attach_ms: int = ATTACH_MS,
                 lease_ms: int = LEASE_MS) -> None:
        self.prefix = prefix
        self.lobby_ttl_ms = lobby_ttl_ms
        self.attach_ms = attach_ms
        self.lease_ms = lease_ms
        self.clock = RedisClock()
        self.channel = f"{prefix}events"
        self._key = f"{prefix}q"  # every script's KEYS[1]
        # A bounded pool: a burst of calls waits for a connection (at most 5 s) rather than
        # opening one each; the events subscription holds one of them.
        self._redis = aioredis.Redis(connection_pool=aioredis.BlockingConnectionPool.from_url(
            url, max_connections=MAX_CONNECTIONS, timeout=5, decode_responses=True,
            socket_timeout=5.0, socket_connect_timeout=5.0, health_check_interval=10,
            client_name="machiavelox-matchmaking"))
        scripts = {"add_ticket": _ADD_TICKET, "attach": _ATTACH, "detach": _DETACH,
                   "cancel": _CANCEL, "form": _FORM, "create_lobby": _CREATE_LOBBY,
                   "join_lobby": _JOIN_LOBBY, "leave_lobby": _LEAVE_LOBBY,
                   "expire_lobbies": _EXPIRE_LOBBIES, "claim_lobbies": _CLAIM_LOBBIES,
                   "progress": _PROGRESS, "placed": _PLACED, "unplaced": _UNPLACED,
                   "stale": _STALE, "release": _RELEASE, "keepalive": _KEEPALIVE,
                   "sweep": _SWEEP, "lead": _LEAD}
        self._scripts = {name: self._redis.register_script(lua)
                         for name, lua in scripts.items()}
        self._many = {name: _Batched(self._run, name)
                      for name in ("add_ticket", "detach", "progress", "placed", "unplaced")}
        self._deliver: Callable[[str, Seated | str], None] | None = None
        self._listener: asyncio.Task[None] | None = None
        self._syncer: asyncio.Task[None] | None = None
        self._subscribed = asyncio.Event()
        self._queue_len = 0
        self._lobby_seats = 0

    # ------------------------------------------------------------------ plumbing
    @contextlib.asynccontextmanager
    async def _guard(self) -> AsyncIterator[None]:
        try:
            yield
        except ResponseError:  # (a script's own error: a bug, not an outage)
            raise
        except RedisError as exc:
            raise StoreUnavailableError(f"redis: {exc}") from exc

    async def _run(self, name: str, *args: str | int) -> Any:
        async with self._guard():
            return await self._scripts[name](keys=[self._key], args=[self.prefix, *args])

    async def _json(self, name: str, *args: str | int) -> Any:
        return json.loads(await self._run(name, *args))

    async def start(self, timeout_s: float = 10.0) -> None:
        """Read Redis's clock and subscribe to the outcomes of other replicas."""
        await self._sync()
        self._listener = asyncio.create_task(self._listen(), name="agora-redis-listener")
        self._syncer = asyncio.create_task(self._resync(), name="agora-redis-clock")
        try:
            await asyncio.wait_for(self._subscribed.wait(), timeout_s)
        except TimeoutError:
            await self.close()
            raise StoreUnavailableError(f"no subscription to {self.channel} after "
                                        f"{timeout_s} s") from None

    async def _sync(self) -> None:
        async with self._guard():
            seconds, micros = await self._redis.time()
        self.clock.sync(int(seconds) * 1000 + int(micros) // 1000)

    async def _resync(self) -> None:
        while True:
            await asyncio.sleep(_RESYNC_S)
            try:
                await self._sync()
            except StoreUnavailableError as err:
                log.warning("could not read Redis's clock: %s", err)

    async def _listen(self) -> None:
        delay = 0.1
        while True:
            pubsub = self._redis.pubsub()
            try:
                await pubsub.subscribe(self.channel)
                async for message in pubsub.listen():
                    if message["type"] == "subscribe":
                        self._subscribed.set()
                        delay = 0.1
                    elif message["type"] == "message":
                        self._outcome(message["data"])
            except RedisError as exc:
                self._subscribed.clear()
                log.warning("agorà events subscription lost, retrying in %.1f s: %s", delay, exc)
            finally:
                with contextlib.suppress(RedisError):
                    await pubsub.aclose()  # type: ignore[no-untyped-call]
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)

    @staticmethod
    def _decode(what: Any) -> Seated | str:
        if isinstance(what, list):
            return Seated(what[1], what[2], tuple(_list(what[3])))
        return str(what)

    def _outcome(self, data: str) -> None:
        try:
            watch, what = json.loads(data)
            outcome = self._decode(what)
        except (ValueError, TypeError, IndexError):
            log.warning("an agorà event that does not decode: %.80r", data)
            return
        if self._deliver is not None:
            self._deliver(str(watch), outcome)

    def on_outcome(self, deliver: Callable[[str, Seated | str], None]) -> None:
        self._deliver = deliver

    async def close(self) -> None:
        for task in (self._listener, self._syncer):
            if task is not None:
                await stop_task(task)
        self._listener = self._syncer = None
        with contextlib.suppress(RedisError):
            await self._redis.aclose()

    # ------------------------------------------------------------------ competitive
    async def add_ticket(self, ticket: Ticket, watch_id: str) -> None:
        answer = await self._many["add_ticket"](
            ticket.ticket_id, ticket.player, repr(ticket.ordinal), ticket.enqueued_ms, watch_id,
            ticket.enqueued_ms + self.attach_ms)
        if answer[0] == "spot":
            raise spot_refusal(ticket.player, _spot(answer[1]))

    async def attach(self, ticket_id: str, player: str, watch_id: str, now_ms: int
                     ) -> tuple[TicketState, str]:
        answer = await self._json("attach", ticket_id, player, watch_id,
                                  now_ms + self.attach_ms)
        if answer[0] == "unknown":
            raise UnknownTicket()
        if answer[0] == "notyours":
            raise NotYours()
        record, replaced = answer[1], answer[2]
        ticket = Ticket(ticket_id, player, float(record["ordinal"]), int(record["at"]))
        seated = None
        if record.get("status") == "assigned":
            seated = Seated(record["table"], record["shard"],
                            tuple(_list(json.loads(record["players"]))))
        return TicketState(ticket, record["status"], seated), replaced

    async def detach(self, ticket_id: str, watch_id: str) -> Ticket | None:
        answer = _list(await self._many["detach"](ticket_id, watch_id))
        if not answer:
            return None
        return Ticket(ticket_id, answer[0], float(answer[1]), int(answer[2]))

    async def cancel(self, ticket_id: str, player: str) -> Cancelled | None:
        answer = await self._json("cancel", ticket_id, player)
        if answer[0] == "notyours":
            raise NotYours()
        if answer[0] == "no":
            return None
        return Cancelled((answer[1],) if answer[1] else (), answer[0])

    async def waiting(self) -> list[Ticket]:
        async with self._guard(), self._redis.pipeline(transaction=False) as pipe:
            pipe.hgetall(self._key)
            pipe.get(f"{self.prefix}lseats")
            raw, seats = await pipe.execute()
        entries = []
        for ticket_id, data in raw.items():
            player, ordinal, at, seq = json.loads(data)
            entries.append((int(at), int(seq), Ticket(ticket_id, player, float(ordinal),
                                                       int(at))))
        entries.sort(key=lambda e: (e[0], e[1]))
        self._queue_len = len(entries)
        self._lobby_seats = int(seats or 0)
        return [e[2] for e in entries]

    async def form(self, groups: Sequence[Group], owner: str, now_ms: int
                   ) -> list[Placement]:
        args: list[str | int] = [owner, now_ms + self.lease_ms]
        by_id = {}
        for group in groups:
            args += [group.placement_id, *(t.ticket_id for t in group.tickets), *group.seats]
            by_id[group.placement_id] = group
        formed = _list(await self._json("form", *args))
        out = []
        for placement_id in formed:
            group = by_id[placement_id]
            out.append(Placement(placement_id, group.seats, MatchKind.SINGLE, True,
                                 tickets=tuple(t.ticket_id for t in group.tickets)))
        self._queue_len -= 3 * len(out)
        return out

    # ------------------------------------------------------------------ friendly
    async def create_lobby(self, creator: str, kind: MatchKind, now_ms: int,
                           draw: Callable[[], str]) -> tuple[Lobby, bool]:
        codes = [draw() for _ in range(_CODE_TRIES)]
        answer = await self._json("create_lobby", creator, kind.value, now_ms, *codes)
        if answer[0] == "open":
            raise Refused("lobby/open", open_lobby_message(creator, _KINDS[answer[1]]))
        if answer[0] == "nocode":
            raise RuntimeError("no free invite code found")
        return _lobby(answer[1]), answer[0] == "new"

    async def join_lobby(self, code: str, player: str, watch_id: str, now_ms: int
                         ) -> tuple[Lobby, str, str]:
        answer = await self._json("join_lobby", code, player, watch_id,
                                  now_ms + self.attach_ms)
        if answer[0] == "unknown":
            raise UnknownCode()
        if answer[0] == "full":
            raise lobby_full()
        if answer[0] == "spot":
            raise spot_refusal(player, _spot(answer[1]))
        view = answer[1]
        return _lobby(view), answer[2], view.get("shard", "")

    async def leave_lobby(self, code: str, player: str, watch_id: str) -> bool:
        return bool(await self._run("leave_lobby", code, player, watch_id))

    async def expire_lobbies(self, now_ms: int) -> list[tuple[Lobby, Outcome]]:
        answer = _list(await self._json("expire_lobbies", now_ms - self.lobby_ttl_ms))
        return [(_lobby(view), tuple(_list(watches))) for view, watches in answer]

    async def claim_lobbies(self, new_id: Callable[[], str], owner: str, now_ms: int
                            ) -> list[Placement]:
        answer = _list(await self._json("claim_lobbies", owner, now_ms + self.lease_ms,
                                        new_id()))
        return [placement_from(p) for p in answer]

    async def lobby(self, code: str) -> Lobby | None:
        async with self._guard():
            view: dict[str, str] = await self._redis.hgetall(  # type: ignore[assignment]
                f"{self.prefix}l:{code}")
        return _lobby({"code": code, **view}) if view else None

    # ------------------------------------------------------------------ placements
    async def progress(self, placement: Placement, owner: str, now_ms: int) -> bool:
        return bool(await self._many["progress"](placement.placement_id, owner,
                                                 now_ms + self.lease_ms,
                                                 placement_json(placement)))

    async def placed(self, placement: Placement, seated: Seated, owner: str
                     ) -> Outcome | None:
        answer = await self._many["placed"](placement.placement_id, owner, seated.table_id,
                                            seated.shard_id)
        return tuple(_list(answer[1])) if answer[0] == "ok" else None

    async def unplaced(self, placement: Placement, owner: str, now_ms: int
                       ) -> Unplaced | None:
        answer = await self._many["unplaced"](placement.placement_id, owner, now_ms)
        if answer[0] != "ok":
            return None
        return Unplaced(tuple(_list(answer[1])), tuple(_list(answer[2])))

    async def stale(self, owner: str, now_ms: int) -> list[Placement]:
        answer = _list(await self._json("stale", owner, now_ms, now_ms + self.lease_ms))
        return [placement_from(json.loads(p)) for p in answer]

    # ------------------------------------------------------------------ seats
    async def release(self, table_id: str) -> tuple[str, ...]:
        return tuple(_list(await self._json("release", table_id)))

    async def seated_tables(self) -> list[str]:
        async with self._guard():
            tables: set[str] = await self._redis.smembers(  # type: ignore[assignment]
                f"{self.prefix}tables")
        return sorted(tables)

    async def where(self, player: str) -> Spot | None:
        async with self._guard():
            value: str | None = await self._redis.get(  # type: ignore[assignment]
                f"{self.prefix}p:{player}")
        return None if value is None else _spot(value)

    # ------------------------------------------------------------------ housekeeping
    async def keepalive(self, watch_ids: Sequence[str], placement_ids: Sequence[str],
                        owner: str, now_ms: int) -> list[tuple[str, Seated | str]]:
        queued, seats, moved = await self._json(
            "keepalive", owner, now_ms + self.attach_ms, now_ms + self.lease_ms,
            len(watch_ids), *watch_ids, *placement_ids)
        self._queue_len, self._lobby_seats = int(queued), int(seats)
        return [(str(watch), self._decode(what)) for watch, what in _list(moved)]

    async def sweep(self, now_ms: int) -> int:
        gone = 0
        for _ in range(100):  # (bounded: 100 batches a call)
            swept = int(await self._run("sweep", now_ms, _SWEEP_BATCH))
            gone += swept
            if swept < _SWEEP_BATCH:
                break
        return gone

    async def lead(self, owner: str, now_ms: int, lease_ms: int) -> bool:
        """This replica holds the matching lease (taken if free, renewed if its own)."""
        return bool(await self._run("lead", owner, lease_ms, now_ms))

    def queue_len(self) -> int:
        return self._queue_len

    def waiting_seats(self) -> int:
        return self._lobby_seats

    async def snapshot(self) -> Snapshot:
        P = self.prefix
        async with self._guard():
            placements = []
            async for key in self._redis.scan_iter(match=f"{P}pl:*", count=1_000):
                data = await self._redis.hget(key, "placement")
                if data:
                    placements.append(placement_from(json.loads(data)))
            tables = {}
            for table_id in await self._redis.smembers(f"{P}tables"):
                players = await self._redis.hget(f"{P}tb:{table_id!s}", "players")
                tables[str(table_id)] = tuple(_list(json.loads(players or "[]")))
            spots = {}
            async for key in self._redis.scan_iter(match=f"{P}p:*", count=1_000):
                value = await self._redis.get(key)
                if value is not None:
                    spots[str(key)[len(P) + 2:]] = _spot(str(value))
        waiting = tuple(t.ticket_id for t in await self.waiting())
        return Snapshot(tuple(sorted(placements, key=lambda p: p.placement_id)), tables, spots,
                        waiting)

    async def delete_all(self) -> int:
        """Delete every key of this prefix (tests, benchmarks); how many."""
        count = 0
        async with self._guard():
            async for key in self._redis.scan_iter(match=f"{self.prefix}*", count=1_000):
                count += await self._redis.delete(key)
        return count


async def stop_task(task: asyncio.Task[Any], limit_s: float = 5.0) -> None:
    """Cancel `task` and wait until it ends, cancelling again if the cancellation was absorbed
    (redis-py's asyncio client can absorb one that lands mid-command); at most `limit_s`."""
    deadline = time.monotonic() + limit_s
    while not task.done() and time.monotonic() < deadline:
        task.cancel()
        await asyncio.wait({task}, timeout=0.2)
    if task.done() and not task.cancelled() and task.exception() is not None:
        log.warning("%s ended with %r", task.get_name(), task.exception())
