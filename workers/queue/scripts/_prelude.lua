-- Shared by every script (prepended when loaded). Events are a convenience log for progress
-- streams; the job hash holds the truth, so the log is capped and expires on its own.
local function emit(events_key, ...)
  redis.call('XADD', events_key, 'MAXLEN', '~', 200, '*', ...)
  redis.call('EXPIRE', events_key, 604800)
end

local function drop_entry(stream, group, entry)
  if entry and entry ~= '' then
    redis.call('XACK', stream, group, entry)
    redis.call('XDEL', stream, entry)
  end
end

-- A job that ended and names a callback_url in its spec becomes due for its webhook now.
local function notify_webhook(job_key, due_key, now)
  if not due_key or due_key == '' then return end
  local spec = redis.call('HGET', job_key, 'spec')
  if not spec then return end
  local ok, s = pcall(cjson.decode, spec)
  if ok and type(s) == 'table' and type(s['callback_url']) == 'string' then
    redis.call('ZADD', due_key, 'NX', now, redis.call('HGET', job_key, 'id'))
  end
end

-- A job has just ended: its result lives job_ttl seconds from now (not from its creation), and
-- the jobs index, which the sweep reads by score, holds its end time from now on.
local function ended(job_key, jobs_key, now, job_ttl)
  redis.call('HSET', job_key, 'expires_at', tostring(tonumber(now) + tonumber(job_ttl)))
  redis.call('ZADD', jobs_key, 'XX', now, redis.call('HGET', job_key, 'id'))
end

local function hset_json(key, json)
  local fields = cjson.decode(json)
  local flat = {}
  for k, v in pairs(fields) do
    flat[#flat + 1] = k
    flat[#flat + 1] = tostring(v)
  end
  if #flat > 0 then redis.call('HSET', key, unpack(flat)) end
end

-- The job lists (GET /v1/jobs): every job by creation time, and each API key's own.
local function list_job(created_key, key_index, created, job_id)
  if created_key and created_key ~= '' then redis.call('ZADD', created_key, created, job_id) end
  if key_index and key_index ~= '' then redis.call('ZADD', key_index, created, job_id) end
end
