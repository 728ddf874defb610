"""The Lua scripts of the agorà's Redis store (redis_store.py): every change of the agorà's
state is one of them, run atomically by Redis. Each gets the key prefix in ARGV[1] and the queue
key as KEYS[1] (which routes the call in a Redis Cluster)."""

from __future__ import annotations

# Shared by every script: ARGV[1] is the prefix; KEYS[1] (the queue) routes the call.
PRELUDE = r"""
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
local function queue_of(tid)
  -- the queue a ticket waits in: `q` (Machiavelox) or `qc` (ranked classic, issue 16)
  return redis.call('HGET', k('t', tid), 'queue') or 'q'
end
local function remove_waiting(tid)
  -- a waiting ticket leaves its queue: its player is free
  local player = redis.call('HGET', k('t', tid), 'player')
  local queue = queue_of(tid)
  forget_watch(redis.call('HGET', k('t', tid), 'watch'))
  redis.call('DEL', k('t', tid))
  redis.call('HDEL', k(queue), tid)
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
local function seats_of(view)
  -- a lobby's seats: a classic table's own, else Machiavelox's three (queue.TableRules)
  return tonumber(view.seats or '') or 3
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
MANY = r"""
local function many(one)
  local out = {}
  local width = tonumber(ARGV[2])
  for i = 3, #ARGV, width do table.insert(out, one(unpack(ARGV, i, i + width - 1))) end
  return cjson.encode(out)
end
"""

# Item: ticket, player, ordinal, at, watch, attached until, queue (`q` or `qc`)
ADD_TICKET = PRELUDE + MANY + r"""
local function one(...)
  local A = {...}
  local spot = redis.call('GET', k('p', A[2]))
  if spot then return ({'spot', spot}) end
  local seq = redis.call('INCR', k('seq'))
  redis.call('SET', k('p', A[2]), 'q ' .. A[1])
  redis.call('HSET', k('t', A[1]), 'player', A[2], 'ordinal', A[3], 'at', A[4],
             'seq', seq, 'watch', A[5], 'status', 'waiting', 'queue', A[7])
  redis.call('HSET', k(A[7]), A[1], cjson.encode({A[2], A[3], A[4], seq}))
  redis.call('ZADD', k('alive'), A[6], A[5])
  redis.call('SET', k('w', A[5]), cjson.encode({'q', A[1]}))
  return ({'ok'})
end
return many(one)
"""

# ARGV: P, ticket, player, watch, attached until
ATTACH = PRELUDE + r"""
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
DETACH = PRELUDE + MANY + r"""
local function one(...)
  local A = {...}
  redis.call('ZREM', k('alive'), A[2])
  redis.call('DEL', k('w', A[2]))
  local t = k('t', A[1])
  if redis.call('HGET', t, 'watch') ~= A[2] then return ({}) end
  redis.call('HSET', t, 'watch', '')
  if redis.call('HGET', t, 'status') ~= 'waiting' then return ({}) end
  local h = redis.call('HMGET', t, 'player', 'ordinal', 'at', 'queue')
  remove_waiting(A[1])
  return (h)
end
return many(one)
"""

# ARGV: P, ticket (or a friendly join's), player
CANCEL = PRELUDE + r"""
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

# ARGV: P, owner, lease until, then per group: placement, its queue (`q` or `qc`), its size n,
# n tickets, n seats, its seats and classic rules ("": Machiavelox)
FORM = PRELUDE + r"""
local formed = {}
local i = 4
while i <= #ARGV do
  local pid, queue, n = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  local tickets, seats = {}, {}
  for j = 1, n do
    tickets[j] = ARGV[i + 2 + j]
    seats[j] = ARGV[i + 2 + n + j]
  end
  local rules_seats, classic = ARGV[i + 3 + 2 * n], ARGV[i + 4 + 2 * n]
  i = i + 5 + 2 * n
  local waiting = true
  for _, tid in ipairs(tickets) do
    if redis.call('HEXISTS', k(queue), tid) == 0 then waiting = false end
  end
  if waiting then
    for _, tid in ipairs(tickets) do
      redis.call('HDEL', k(queue), tid)
      redis.call('HSET', k('t', tid), 'status', 'placing', 'placement', pid)
      local player = redis.call('HGET', k('t', tid), 'player')
      redis.call('SET', k('p', player), 't ')
    end
    redis.call('HSET', k('pl', pid), 'owner', ARGV[2], 'placement', cjson.encode({
      placement_id = pid, players = seats, kind = 'single', competitive = true,
      tickets = tickets, code = '', state = 'new', shard_id = '', table_id = '',
      refused = {}, seats = tonumber(rules_seats), classic = classic}))
    redis.call('ZADD', k('leases'), ARGV[3], pid)
    table.insert(formed, pid)
  end
end
return cjson.encode(formed)
"""

# ARGV: P, creator, kind, now, seats, classic ("": Machiavelox), candidate codes...
CREATE_LOBBY = PRELUDE + r"""
local open = redis.call('GET', k('lopen', ARGV[2]))
if open then
  local view = lobby_view(open)
  if view.kind == ARGV[3] and (view.classic or '') == ARGV[6] then
    return cjson.encode({'old', view})
  end
  return cjson.encode({'open', view.kind, seats_of(view), view.classic or ''})
end
for i = 7, #ARGV do
  local code = ARGV[i]
  if redis.call('EXISTS', k('l', code)) == 0 then
    redis.call('HSET', k('l', code), 'kind', ARGV[3], 'creator', ARGV[2], 'created', ARGV[4],
               'players', '[]', 'table', '', 'shard', '', 'placing', '')
    if ARGV[6] ~= '' then
      redis.call('HSET', k('l', code), 'seats', ARGV[5], 'classic', ARGV[6])
    end
    redis.call('SET', k('lopen', ARGV[2]), code)
    redis.call('ZADD', k('lage'), ARGV[4], code)
    return cjson.encode({'new', lobby_view(code)})
  end
end
return cjson.encode({'nocode'})
"""

# ARGV: P, code, player, watch, attached until
JOIN_LOBBY = PRELUDE + r"""
local l = k('l', ARGV[2])
if redis.call('EXISTS', l) == 0 then return cjson.encode({'unknown'}) end
local players = list(redis.call('HGET', l, 'players'))
local seats = tonumber(redis.call('HGET', l, 'seats') or '') or 3
local member = false
for _, p in ipairs(players) do if p == ARGV[3] then member = true end end
if not member then
  if #players >= seats then return cjson.encode({'full', seats}) end
  local spot = redis.call('GET', k('p', ARGV[3]))
  if spot then return cjson.encode({'spot', spot}) end
  table.insert(players, ARGV[3])
  redis.call('HSET', l, 'players', cjson.encode(players))
  redis.call('SET', k('p', ARGV[3]), 'l ' .. ARGV[2])
  redis.call('INCR', k('lseats'))
  if #players == seats then redis.call('SADD', k('lready'), ARGV[2]) end
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
LEAVE_LOBBY = PRELUDE + r"""
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

# ARGV: P, code (a lobby with no players and no table, nor one being created)
DROP_LOBBY = PRELUDE + r"""
local view = lobby_view(ARGV[2])
if not view.kind or #list(view.players) > 0 or (view.table and view.table ~= '')
    or (view.placing and view.placing ~= '') then
  return 0
end
if redis.call('GET', k('lopen', view.creator)) == ARGV[2] then
  redis.call('DEL', k('lopen', view.creator))
end
redis.call('DEL', k('l', ARGV[2]))
redis.call('ZREM', k('lage'), ARGV[2])
redis.call('SREM', k('lready'), ARGV[2])
return 1
"""

# ARGV: P, cutoff (created at or before it: expired)
EXPIRE_LOBBIES = PRELUDE + r"""
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
CLAIM_LOBBIES = PRELUDE + r"""
local out = {}
local n = 0
for _, code in ipairs(redis.call('SMEMBERS', k('lready'))) do
  redis.call('SREM', k('lready'), code)
  local view = lobby_view(code)
  local players = list(view.players)
  if view.kind and #players == seats_of(view) and view.table == '' and view.placing == '' then
    n = n + 1
    local pid = ARGV[4] .. string.format('%02x', n)
    redis.call('HSET', k('l', code), 'placing', pid)
    local placement = {placement_id = pid, players = players, kind = view.kind,
      competitive = false, tickets = {}, code = code, state = 'new', shard_id = '',
      table_id = '', refused = {}, seats = seats_of(view), classic = view.classic or ''}
    redis.call('HSET', k('pl', pid), 'owner', ARGV[2], 'placement', cjson.encode(placement))
    redis.call('ZADD', k('leases'), ARGV[3], pid)
    table.insert(out, placement)
  end
end
return cjson.encode(out)
"""

# Item: placement id, owner, lease until, placement JSON
PROGRESS = PRELUDE + MANY + r"""
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
PLACED = PRELUDE + MANY + r"""
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
UNPLACED = PRELUDE + MANY + r"""
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
          redis.call('HSET', k(queue_of(tid)), tid,
                     cjson.encode({h[1], h[2], h[3], tonumber(h[4])}))
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
STALE = PRELUDE + r"""
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
RELEASE = PRELUDE + r"""
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
KEEPALIVE = PRELUDE + r"""
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
SWEEP = PRELUDE + r"""
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
LEAD = PRELUDE + r"""
local holder = redis.call('GET', k('matcher'))
if not holder or holder == ARGV[2] then
  redis.call('SET', k('matcher'), ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0
"""


SCRIPTS = {"add_ticket": ADD_TICKET, "attach": ATTACH, "detach": DETACH, "cancel": CANCEL,
           "form": FORM, "create_lobby": CREATE_LOBBY, "join_lobby": JOIN_LOBBY,
           "leave_lobby": LEAVE_LOBBY, "drop_lobby": DROP_LOBBY,
           "expire_lobbies": EXPIRE_LOBBIES,
           "claim_lobbies": CLAIM_LOBBIES, "progress": PROGRESS, "placed": PLACED,
           "unplaced": UNPLACED, "stale": STALE, "release": RELEASE, "keepalive": KEEPALIVE,
           "sweep": SWEEP, "lead": LEAD}
"""Every script by the name the store calls it."""
