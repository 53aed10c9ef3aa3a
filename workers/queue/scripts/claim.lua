-- Take a delivered stream entry: the job becomes running under this consumer with attempt + 1.
-- An entry whose job is gone, finished, cancelled or re-queued under another entry is dropped.
-- Returns the record as it now is (the worker needs its spec and input), saving a read.
-- KEYS: job, stream, events
-- ARGV: group, consumer, entry, now
local st = redis.call('HMGET', KEYS[1], 'state', 'entry', 'attempt')
if not st[1] then
  drop_entry(KEYS[2], ARGV[1], ARGV[3])
  return {'gone', ''}
end
if st[1] ~= 'queued' or st[2] ~= ARGV[3] then
  drop_entry(KEYS[2], ARGV[1], ARGV[3])
  return {'skip', st[1]}
end
local attempt = tonumber(st[3]) + 1
-- progress is kept from an earlier attempt: what a caller sees never goes back
redis.call('HSET', KEYS[1], 'state', 'running', 'attempt', attempt, 'owner', ARGV[2],
           'stage', 'starting', 'attempt_started_at', ARGV[4], 'updated_at', ARGV[4])
redis.call('HSETNX', KEYS[1], 'started_at', ARGV[4])
emit(KEYS[3], 'state', 'running', 'attempt', tostring(attempt), 'worker', ARGV[2])
return {'ok', tostring(attempt), redis.call('HGETALL', KEYS[1])}
