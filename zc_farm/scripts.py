"""The Lua scripts that make the farm's few multi-key steps atomic in Redis.

ALLOCATE   the next generation of a tag, above the caller's floor (its local store's
           last_generation) and above every number handed out before; with mode ``seed``, only
           raises the counter to the floor (a worker that learnt Redis lost its data). It also
           reads the farm's epoch (a token made once per Redis data set), which tells a worker
           that Redis restarted empty or was flushed.
COMMIT     a publish: the uploaded chunks become the shot's blob, its record, its place in the
           tag's shots, the tag's trim to the newest ``keep`` and the event, all or nothing. Its
           answer: ``ok``, ``duplicate`` (this very shot is there already), ``conflict`` (another
           shot holds the generation), ``taken`` (a claim of a number Redis has handed out),
           ``incomplete`` (chunks missing), ``trimmed`` (older than the newest ``keep``: not kept).
NEWEST     the newest published generation of a tag, its first tensor's digest and the epoch
           (one round trip: what a Handoff's fingerprint costs).

Generations are decimal strings from end to end: Lua's numbers are doubles, exact only up to
2^53, and the engine's generations go to 2^63-1 (ZC_MAX_GENERATION). So the scripts compare
them as strings of digits (``lt``), add one by hand (``succ``) and never call ``tonumber`` on
one; a Redis integer reply would pass through a double too, so every number is returned as a
string. A counter that is not a number in 1..2^63-1 (written by something else) is repaired to
the highest number the caller or the farm's records know, and its old value is returned so the
worker can say so. Scores of the sorted sets are doubles (approximate above 2^53); their order
is used only to find candidates, and the exact order comes from the members, compared as strings.
"""

from __future__ import annotations

MAX_GENERATION = (1 << 63) - 1  # the engine's ZC_MAX_GENERATION

_HELPERS = """
local MAX = '9223372036854775807'
local function valid(s)
  return type(s) == 'string' and #s <= 19 and string.match(s, '^[1-9][0-9]*$') ~= nil
         and (#s < 19 or s <= MAX)
end
local function lt(a, b)
  if #a ~= #b then return #a < #b end
  for i = 1, #a do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return false
end
local function succ(s)
  local digits = {}
  for i = 1, #s do digits[i] = string.byte(s, i) - 48 end
  local i = #s
  while i >= 1 do
    if digits[i] < 9 then digits[i] = digits[i] + 1 break end
    digits[i] = 0
    i = i - 1
  end
  local out = {}
  for k = 1, #digits do out[k] = string.char(48 + digits[k]) end
  local text = table.concat(out)
  if i == 0 then text = '1' .. text end
  return text
end
local function highest(members, floor)
  local top = floor
  for _, m in ipairs(members) do
    if valid(m) and (top == '0' or lt(top, m)) then top = m end
  end
  return top
end
local function sorted(members)
  local out = {}
  for _, m in ipairs(members) do if valid(m) then out[#out + 1] = m end end
  table.sort(out, lt)
  return out
end
-- The counter at key as stored (raw: nil when unset), and what it stands for: current, its value
-- ('0' when unset); when raw is no generation (written by something else), current is the highest
-- generation of the sorted set shots and repaired is raw's first 64 bytes (else '').
local function read_counter(key, shots)
  local raw = redis.call('GET', key)
  if raw and not valid(raw) then
    return raw, highest(redis.call('ZRANGE', shots, 0, -1), '0'), string.sub(raw, 1, 64)
  end
  return raw, raw or '0', ''
end
"""

# KEYS: counter, shots, epoch; ARGV: floor ('0' or a generation), mode (next|seed), a new epoch token
ALLOCATE = _HELPERS + """
local floor = ARGV[1]
if floor ~= '0' and not valid(floor) then return redis.error_reply('bad floor ' .. floor) end
local epoch = redis.call('GET', KEYS[3])
if not epoch then
  redis.call('SET', KEYS[3], ARGV[3])
  epoch = ARGV[3]
end
local raw, current, repaired = read_counter(KEYS[1], KEYS[2])
if current == '0' or lt(current, floor) then current = floor end
if ARGV[2] == 'seed' then
  if current ~= '0' and (repaired ~= '' or raw ~= current) then redis.call('SET', KEYS[1], current) end
  return {'seeded', current, epoch, repaired}
end
if current == MAX then
  if repaired ~= '' then redis.call('SET', KEYS[1], current) end
  return {'exhausted', current, epoch, repaired}
end
local gen = succ(current)
redis.call('SET', KEYS[1], gen)
return {'ok', gen, epoch, repaired}
"""

# KEYS: counter, shots, record, blob, upload, tags, published
# ARGV: generation, identity, mode (allocated|claim), keep, chunks, tag base, channel, event, tag,
#       then the record's fields (name, value, ...)
COMMIT = _HELPERS + """
local gen = ARGV[1]
if not valid(gen) then return redis.error_reply('bad generation ' .. gen) end
local existing = redis.call('HGET', KEYS[3], 'identity')
if existing then
  redis.call('DEL', KEYS[5])
  if existing == ARGV[2] then return {'duplicate', gen, ''} end
  return {'conflict', gen, ''}
end
local _, counter, repaired = read_counter(KEYS[1], KEYS[2])
if repaired ~= '' then
  if ARGV[3] == 'claim' and counter == '0' then counter = gen end  -- unknown: a claim is refused
  redis.call('SET', KEYS[1], counter)
end
if ARGV[3] == 'claim' and counter ~= '0' and not lt(counter, gen) then
  redis.call('DEL', KEYS[5])
  return {'taken', counter, repaired}
end
if redis.call('LLEN', KEYS[5]) ~= tonumber(ARGV[5]) then
  redis.call('DEL', KEYS[5])
  return {'incomplete', gen, repaired}
end
if counter == '0' or lt(counter, gen) then redis.call('SET', KEYS[1], gen) end
local fields = {}
for i = 10, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('RENAME', KEYS[5], KEYS[4])
redis.call('PERSIST', KEYS[4])
redis.call('HSET', KEYS[3], unpack(fields))
redis.call('ZADD', KEYS[2], gen, gen)
local status = 'ok'
local members = redis.call('ZRANGE', KEYS[2], 0, -1)
local order = sorted(members)
local extra = #order - tonumber(ARGV[4])
for i = 1, extra do
  local g = order[i]
  redis.call('DEL', ARGV[6] .. 'shot:' .. g, ARGV[6] .. 'blob:' .. g)
  redis.call('ZREM', KEYS[2], g)
  if g == gen then status = 'trimmed' end
end
for _, m in ipairs(members) do  -- a member that is no generation (not written by this pack)
  if not valid(m) then redis.call('ZREM', KEYS[2], m) end
end
local newest = order[#order]
redis.call('ZADD', KEYS[6], newest, ARGV[9])
redis.call('INCR', KEYS[7])
if status == 'ok' then redis.call('PUBLISH', ARGV[7], ARGV[8]) end
return {status, gen, repaired}
"""

# KEYS: shots, epoch; ARGV: tag base
NEWEST = _HELPERS + """
local epoch = redis.call('GET', KEYS[2]) or ''
local top = redis.call('ZREVRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if #top == 0 then return {'', '', epoch} end
local best = highest(redis.call('ZRANGEBYSCORE', KEYS[1], top[2], '+inf'), '0')
if best == '0' then return {'', '', epoch} end
return {best, redis.call('HGET', ARGV[1] .. 'shot:' .. best, 'primary_digest') or '', epoch}
"""


class Scripts:
    """The scripts registered on a redis-py client (EVALSHA, loaded again after a restart)."""

    def __init__(self, client):
        self.allocate = client.register_script(ALLOCATE)
        self.commit = client.register_script(COMMIT)
        self.newest = client.register_script(NEWEST)
