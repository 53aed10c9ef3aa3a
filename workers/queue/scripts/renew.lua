-- Renew the lease of a running job (reset the entry's idle time) and record progress, but only
-- for the owner of the current attempt: returns 0 when the lease was lost (fencing).
-- KEYS: job, stream, events
-- ARGV: group, consumer, entry, attempt, now, progress ('' for none), stage
local st = redis.call('HMGET', KEYS[1], 'state', 'owner', 'attempt', 'entry', 'progress')
if st[1] ~= 'running' or st[2] ~= ARGV[2] or st[3] ~= ARGV[4] or st[4] ~= ARGV[3] then
  return 0
end
redis.call('XCLAIM', KEYS[2], ARGV[1], ARGV[2], 0, ARGV[3], 'JUSTID')
if ARGV[6] ~= '' and tonumber(ARGV[6]) >= tonumber(st[5] or '0') then
  redis.call('HSET', KEYS[1], 'progress', ARGV[6], 'stage', ARGV[7], 'updated_at', ARGV[5])
  emit(KEYS[3], 'state', 'running', 'progress', ARGV[6], 'stage', ARGV[7])
end
return 1
