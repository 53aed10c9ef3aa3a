-- Put a running job back in the queue under a new entry, or fail it for good when it has used
-- all its attempts. Called by the owner after a retryable failure (owner and attempt given), and
-- by a reaper that took an expired lease with XAUTOCLAIM (owner and attempt ''). A release (a
-- worker shutting down hands its job back) costs no attempt: the attempt number still grows (it
-- is the fencing token) but 'releases' is subtracted from it when counting failures. A job that
-- fails for good after its last attempt is dead-lettered (sorted set by time). An entry the
-- reaper finds delivered but never claimed is delivered again.
-- KEYS: job, stream, events, counters, webhooks_due, dead, jobs_index
-- ARGV: group, entry, now, max_attempts, error_json, owner, attempt, job_id, ttl, release,
--       job_ttl
local st = redis.call('HMGET', KEYS[1], 'state', 'owner', 'attempt', 'entry')
if not st[1] then
  drop_entry(KEYS[2], ARGV[1], ARGV[2])
  return {'gone', ''}
end
if ARGV[6] == '' and st[1] == 'queued' and st[4] == ARGV[2] then
  -- delivered but never claimed: its reader died between XREADGROUP and the claim, or Redis
  -- came back from its AOF without the claim's last second of writes. No run started: deliver
  -- it again under a new entry, at no attempt's cost.
  drop_entry(KEYS[2], ARGV[1], ARGV[2])
  local entry = redis.call('XADD', KEYS[2], '*', 'job', ARGV[8])
  redis.call('HSET', KEYS[1], 'entry', entry, 'updated_at', ARGV[3])
  redis.call('HINCRBY', KEYS[4], 'redelivered', 1)
  return {'queued', entry}
end
if st[1] ~= 'running' or st[4] ~= ARGV[2] or (ARGV[6] ~= '' and st[2] ~= ARGV[6])
   or (ARGV[7] ~= '' and st[3] ~= ARGV[7]) then
  if ARGV[6] == '' then drop_entry(KEYS[2], ARGV[1], ARGV[2]) end
  return {'stale', st[1]}
end
redis.call('HSET', KEYS[1], 'last_error', ARGV[5], 'updated_at', ARGV[3])
drop_entry(KEYS[2], ARGV[1], ARGV[2])
local releases = tonumber(redis.call('HGET', KEYS[1], 'releases') or '0')
if ARGV[10] == '1' then
  releases = redis.call('HINCRBY', KEYS[1], 'releases', 1)
elseif tonumber(st[3]) - releases >= tonumber(ARGV[4]) then
  redis.call('HSET', KEYS[1], 'state', 'failed', 'error', ARGV[5], 'finished_at', ARGV[3])
  redis.call('EXPIRE', KEYS[1], ARGV[9])
  ended(KEYS[1], KEYS[7], ARGV[3], ARGV[11])
  redis.call('ZADD', KEYS[6], ARGV[3], ARGV[8])
  redis.call('HINCRBY', KEYS[4], 'dead_lettered', 1)
  redis.call('HINCRBY', KEYS[4], 'failed', 1)
  notify_webhook(KEYS[1], KEYS[5], ARGV[3])
  emit(KEYS[3], 'state', 'failed')
  return {'failed', ''}
end
local entry = redis.call('XADD', KEYS[2], '*', 'job', ARGV[8])
local stage = ARGV[10] == '1' and 'released' or 'retrying'
redis.call('HSET', KEYS[1], 'state', 'queued', 'entry', entry, 'owner', '', 'stage', stage)
redis.call('HINCRBY', KEYS[4], ARGV[10] == '1' and 'released' or 'retried', 1)
emit(KEYS[3], 'state', 'queued', 'stage', stage)
return {'queued', entry}
