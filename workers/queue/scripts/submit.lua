-- Create a job record and queue it, unless the idempotency key names an earlier job. Returns
-- the record as stored (the API answers with it, without reading it back).
-- KEYS: job, stream, events, jobs_index, idem ('' when none), counters, created_index,
--       key_index ('' when no API key)
-- ARGV: job_id, fields_json, now, idem_value, idem_ttl
-- the record may already exist when a recovery re-created it from the manifest meanwhile
if redis.call('EXISTS', KEYS[1]) == 1 then return {'ok', '', redis.call('HGETALL', KEYS[1])} end
if KEYS[5] ~= '' then
  local prev = redis.call('GET', KEYS[5])
  if prev then return {'duplicate', prev} end
end
hset_json(KEYS[1], ARGV[2])
local entry = redis.call('XADD', KEYS[2], '*', 'job', ARGV[1])
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'entry', entry, 'state', 'queued', 'attempt', 0,
           'progress', 0, 'created_at', ARGV[3], 'updated_at', ARGV[3])
redis.call('ZADD', KEYS[4], ARGV[3], ARGV[1])
list_job(KEYS[7], KEYS[8], ARGV[3], ARGV[1])
if KEYS[5] ~= '' then redis.call('SET', KEYS[5], ARGV[4], 'EX', ARGV[5]) end
redis.call('HINCRBY', KEYS[6], 'submitted', 1)
emit(KEYS[3], 'state', 'queued', 'progress', '0')
return {'ok', entry, redis.call('HGETALL', KEYS[1])}
