-- An operator's retry of a job that failed for good: queued again under a new entry, out of the
-- dead-letter set, with its attempts counted from zero again (the attempt number itself keeps
-- growing: it is the fencing token; 'releases' is raised to it, so no earlier run counts).
-- KEYS: job, stream, events, counters, dead, jobs_index
-- ARGV: job_id, now, job_ttl
local st = redis.call('HMGET', KEYS[1], 'state', 'attempt', 'expires_at')
if not st[1] then return {'gone', ''} end
if st[1] ~= 'failed' then return {'not_failed', st[1]} end
if st[3] and tonumber(st[3]) and tonumber(st[3]) < tonumber(ARGV[2]) then
  return {'expired', st[1]}
end
local entry = redis.call('XADD', KEYS[2], '*', 'job', ARGV[1])
redis.call('HSET', KEYS[1], 'state', 'queued', 'entry', entry, 'owner', '', 'stage', 'retried',
           'releases', st[2] or '0', 'updated_at', ARGV[2],
           'expires_at', tostring(tonumber(ARGV[2]) + tonumber(ARGV[3])))
redis.call('HDEL', KEYS[1], 'error', 'finished_at')
redis.call('PERSIST', KEYS[1])
redis.call('ZREM', KEYS[5], ARGV[1])
redis.call('ZADD', KEYS[6], ARGV[2], ARGV[1])
redis.call('HINCRBY', KEYS[4], 'operator_retried', 1)
emit(KEYS[3], 'state', 'queued', 'stage', 'retried')
return {'queued', entry}
