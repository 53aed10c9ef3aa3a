-- Admit a job under its API key's quotas, or refuse it, in one step: simultaneous submissions
-- cannot all pass a check. The key's running set first drops the jobs found ended (or never
-- stored); then the job takes a place in it if one is free, and its upload bytes are counted
-- against the day's if they fit (a refusal on bytes gives the place back).
-- KEYS: running ('' without a concurrent_jobs quota), bytes ('' without a bytes_per_day quota)
-- ARGV: job_id, now, concurrent_limit, running_ttl, upload_bytes, bytes_limit, bytes_ttl,
--       ended job ids...
-- Returns {'ok', 0}, {'concurrent', 0} or {'bytes', bytes used before this job}.
if KEYS[1] ~= '' then
  for i = 8, #ARGV do redis.call('ZREM', KEYS[1], ARGV[i]) end
  if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return {'concurrent', 0} end
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
  redis.call('EXPIRE', KEYS[1], ARGV[4])
end
if KEYS[2] ~= '' then
  local used = redis.call('INCRBY', KEYS[2], ARGV[5])
  redis.call('EXPIRE', KEYS[2], ARGV[7])
  if used > tonumber(ARGV[6]) then
    redis.call('DECRBY', KEYS[2], ARGV[5])
    if KEYS[1] ~= '' then redis.call('ZREM', KEYS[1], ARGV[1]) end
    return {'bytes', used - tonumber(ARGV[5])}
  end
end
return {'ok', 0}
