-- Re-create the record of a job that had ended before Redis lost it, from the outcome saved in
-- the blob store: its terminal state comes back as it was, unless a record exists. No stream
-- entry: it never runs again. Its idempotency key comes back; its webhook is due again.
-- KEYS: job, events, jobs_index, idem ('' when none), counters, webhooks_due, created_index,
--       key_index ('' when no API key)
-- ARGV: job_id, fields_json, finished_at (the index's score), idem_value, idem_ttl, record_ttl, now,
--       created_at
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
hset_json(KEYS[1], ARGV[2])
redis.call('HSET', KEYS[1], 'id', ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[6])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
list_job(KEYS[7], KEYS[8], ARGV[8], ARGV[1])
if KEYS[4] ~= '' then redis.call('SET', KEYS[4], ARGV[4], 'EX', ARGV[5], 'NX') end
redis.call('HINCRBY', KEYS[5], 'recovered_final', 1)
notify_webhook(KEYS[1], KEYS[6], ARGV[7])
emit(KEYS[2], 'state', redis.call('HGET', KEYS[1], 'state'))
return 1
