-- Re-create a job lost from Redis (data loss) from its manifest in the blob store: queued again,
-- with its original creation time, unless a record exists. Its idempotency key comes back too.
-- KEYS: job, stream, events, jobs_index, idem ('' when none), counters, created_index,
--       key_index ('' when no API key)
-- ARGV: job_id, fields_json, created_at, idem_value, idem_ttl, now
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
hset_json(KEYS[1], ARGV[2])
local entry = redis.call('XADD', KEYS[2], '*', 'job', ARGV[1])
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'entry', entry, 'state', 'queued', 'attempt', 0,
           'progress', 0, 'stage', 'recovered', 'created_at', ARGV[3], 'updated_at', ARGV[6])
redis.call('ZADD', KEYS[4], ARGV[3], ARGV[1])
list_job(KEYS[7], KEYS[8], ARGV[3], ARGV[1])
if KEYS[5] ~= '' then redis.call('SET', KEYS[5], ARGV[4], 'EX', ARGV[5], 'NX') end
redis.call('HINCRBY', KEYS[6], 'recovered', 1)
emit(KEYS[3], 'state', 'queued', 'progress', '0')
return 1
