-- Record the outcomes of items of a batch chunk, but only for the owner of the chunk job's
-- current attempt (fencing, as renew): an item's outcome is written once (HSETNX), and the
-- batch's counters move only for an outcome written now, so a repeated call counts nothing twice.
-- KEYS: job (the chunk), batch, batch_done
-- ARGV: consumer, entry, attempt, chunk index, then (item index, outcome JSON, 'ok'|'failed')...
local st = redis.call('HMGET', KEYS[1], 'state', 'owner', 'attempt', 'entry')
if st[1] ~= 'running' or st[2] ~= ARGV[1] or st[3] ~= ARGV[3] or st[4] ~= ARGV[2] then
  return -1
end
local new = 0
for i = 5, #ARGV, 3 do
  if redis.call('HSETNX', KEYS[3], ARGV[i], ARGV[i + 1]) == 1 then
    new = new + 1
    redis.call('HINCRBY', KEYS[2], ARGV[i + 2] == 'ok' and 'succeeded' or 'failed', 1)
    redis.call('HINCRBY', KEYS[2], 'done:' .. ARGV[4], 1)
  end
end
return new
