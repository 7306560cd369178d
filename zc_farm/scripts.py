"""The Lua scripts that make the farm's few multi-key steps atomic in Redis.

ALLOCATE   the next generation of a tag, above the caller's floor (its local store's
           last_generation) and above every number handed out before.
COMMIT     a publish: the uploaded chunks become the shot's blob, its record, its place in the
           tag's shots, the tag's trim to the newest ``keep`` and the event, all or nothing. Its answer: ``ok``, ``duplicate`` (this very shot is there already),
           ``conflict`` (another shot holds the generation), ``taken`` (a claim of a number
           Redis has handed out), ``incomplete`` (chunks missing), ``trimmed`` (older than the
           newest ``keep``: not kept).
NEWEST     the newest published generation of a tag and its first tensor's digest (one round
           trip: what a Handoff's fingerprint costs).

Numbers are Lua doubles: exact up to 2^53 generations.
"""

from __future__ import annotations

ALLOCATE = """
local floor = tonumber(ARGV[1])
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if current < floor then redis.call('SET', KEYS[1], ARGV[1]) end
return redis.call('INCR', KEYS[1])
"""

# KEYS: counter, shots, record, blob, upload, tags, published
# ARGV: generation, identity, mode (allocated|claim), keep, chunks, tag base, channel, event, tag,
#       then the record's fields (name, value, ...)
COMMIT = """
local gen = tonumber(ARGV[1])
local existing = redis.call('HGET', KEYS[3], 'identity')
if existing then
  redis.call('DEL', KEYS[5])
  if existing == ARGV[2] then return {'duplicate', ARGV[1]} end
  return {'conflict', ARGV[1]}
end
local counter = tonumber(redis.call('GET', KEYS[1]) or '0')
if ARGV[3] == 'claim' and gen <= counter then
  redis.call('DEL', KEYS[5])
  return {'taken', tostring(counter)}
end
if redis.call('LLEN', KEYS[5]) ~= tonumber(ARGV[5]) then
  redis.call('DEL', KEYS[5])
  return {'incomplete', ARGV[1]}
end
if gen > counter then redis.call('SET', KEYS[1], ARGV[1]) end
local fields = {}
for i = 10, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('RENAME', KEYS[5], KEYS[4])
redis.call('PERSIST', KEYS[4])
redis.call('HSET', KEYS[3], unpack(fields))
redis.call('ZADD', KEYS[2], gen, ARGV[1])
local status = 'ok'
local extra = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[4])
if extra > 0 then
  local old = redis.call('ZRANGE', KEYS[2], 0, extra - 1)
  for _, g in ipairs(old) do
    redis.call('DEL', ARGV[6] .. 'shot:' .. g, ARGV[6] .. 'blob:' .. g)
    if g == ARGV[1] then status = 'trimmed' end
  end
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, extra - 1)
end
local newest = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
redis.call('ZADD', KEYS[6], newest[2], ARGV[9])
redis.call('INCR', KEYS[7])
if status == 'ok' then redis.call('PUBLISH', ARGV[7], ARGV[8]) end
return {status, ARGV[1]}
"""

# KEYS: shots; ARGV: tag base
NEWEST = """
local top = redis.call('ZRANGE', KEYS[1], -1, -1)
if #top == 0 then return false end
return {top[1], redis.call('HGET', ARGV[1] .. 'shot:' .. top[1], 'primary_digest') or ''}
"""


class Scripts:
    """The scripts registered on a redis-py client (EVALSHA, loaded again after a restart)."""

    def __init__(self, client):
        self.allocate = client.register_script(ALLOCATE)
        self.commit = client.register_script(COMMIT)
        self.newest = client.register_script(NEWEST)
