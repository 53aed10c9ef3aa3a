-- Put a running job back in the queue under a new entry, or fail it for good when it has used
-- all its attempts. Called by the owner after a retryable failure (owner and attempt given), and
-- by a reaper that took an expired lease with XAUTOCLAIM (owner and attempt '').
-- KEYS: job, stream, events, counters, webhooks_due
-- ARGV: group, entry, now, max_attempts, error_json, owner, attempt, job_id, ttl
local st = redis.call('HMGET', KEYS[1], 'state', 'owner', 'attempt', 'entry')
if not st[1] then
  drop_entry(KEYS[2], ARGV[1], ARGV[2])
  return {'gone', ''}
end
if st[1] ~= 'running' or st[4] ~= ARGV[2] or (ARGV[6] ~= '' and st[2] ~= ARGV[6])
   or (ARGV[7] ~= '' and st[3] ~= ARGV[7]) then
  if ARGV[6] == '' then drop_entry(KEYS[2], ARGV[1], ARGV[2]) end
  return {'stale', st[1]}
end
redis.call('HSET', KEYS[1], 'last_error', ARGV[5], 'updated_at', ARGV[3])
drop_entry(KEYS[2], ARGV[1], ARGV[2])
if tonumber(st[3]) >= tonumber(ARGV[4]) then
  redis.call('HSET', KEYS[1], 'state', 'failed', 'error', ARGV[5], 'finished_at', ARGV[3])
  redis.call('EXPIRE', KEYS[1], ARGV[9])
  redis.call('HINCRBY', KEYS[4], 'failed', 1)
  notify_webhook(KEYS[1], KEYS[5], ARGV[3])
  emit(KEYS[3], 'state', 'failed')
  return {'failed', ''}
end
local entry = redis.call('XADD', KEYS[2], '*', 'job', ARGV[8])
redis.call('HSET', KEYS[1], 'state', 'queued', 'entry', entry, 'owner', '', 'progress', 0,
           'stage', 'retrying')
redis.call('HINCRBY', KEYS[4], 'retried', 1)
emit(KEYS[3], 'state', 'queued', 'stage', 'retrying')
return {'queued', entry}
