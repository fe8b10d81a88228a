-- The rules of src/policy/breaker.rs, budget.rs and shared.rs, run atomically by Redis on one
-- key's hash; each function mirrors the Rust one of the same name, line for line. Every number
-- is an integer (milliseconds, thousandths of a token) held in a Lua double, exact below 2^53;
-- the caller keeps every setting below 2^50. One script for every operation, so that one SHA
-- is loaded once.
--
-- KEYS[1]    the key's hash: g (generation), s (closed, open, half-open), f (the failures'
--            times, comma-separated: those counted while closed, those that opened it since
--            while open or half-open), u (open until), l (lease until), o (open for),
--            m (tokens, in thousandths), a (when m was brought up to date), h (the latest
--            outcomes, oldest first, as time:1 for a success and time:0 for a failure,
--            comma-separated; kept only by runs with the adaptive delay).
-- ARGV[1]    the operation: admit, after, before or view.
-- ARGV[2]    the time in ms; '' for the server's own clock (TIME). Only tests give one.
-- ARGV[3-11] failures, window, first open time, longest open time, lease, burst and ratio
--            (thousandths), refill period, expiry.
-- ARGV[12-]  the operation's own.
--
-- A key of another type, or a hash with a field that is not as this script writes it (a whole
-- number below 2^53, lists of them), could not be read: it is started afresh, and replaced by
-- the operations that write. No stored value can make the script loop.
--
-- Returns the time, 1 if the hash could not be read (else 0), the state's nine fields, then
-- the operation's answer. Numbers go back as integers, which Redis converts exactly; text
-- (the failures' and outcomes' times, and what is stored) is written with fmt, since Lua's
-- own tostring switches to an exponent above 14 digits.

local now
if ARGV[2] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  now = tonumber(ARGV[2])
end
local FAILURES = tonumber(ARGV[3])
local WINDOW = tonumber(ARGV[4])
local FIRST_OPEN = tonumber(ARGV[5])
local OPEN_MAX = tonumber(ARGV[6])
local LEASE = tonumber(ARGV[7])
-- breaker.rs's lease_until: a lease ends a part of a fifth more after LEASE, the clock's
-- remainder, out of step with any cron.
local SPREAD = math.floor(LEASE / 5)
local BURST = tonumber(ARGV[8])
local RATIO = tonumber(ARGV[9])
local REFILL = tonumber(ARGV[10])
local EXPIRY = tonumber(ARGV[11])
local MILLI = 1000
-- adaptive.rs's KEPT: the outcomes a key keeps.
local KEPT = 32

local function fmt(x)
  return string.format('%.0f', x)
end

-- KeyState::new
local function fresh()
  return { g = 0, s = 'closed', f = {}, u = 0, l = 0, o = 0, m = BURST, a = now, h = {} }
end

-- Every number the script keeps is a whole number below 2^53, where doubles are exact.
local EXACT = 9007199254740992
-- The most times a list of the hash may hold: the most failures --breaker-failures counts.
local MOST = 1000

-- A stored number as fmt writes it: digits only, below EXACT; else nil. tonumber alone would
-- take inf, nan, -1e309, 0x10 or 1.5, and one of them would make idiv loop for ever.
local function whole(text)
  if type(text) ~= 'string' or #text > 16 or not string.find(text, '^%d+$') then return nil end
  local n = tonumber(text)
  if n >= EXACT then return nil end
  return n
end

-- A stored list, split at its commas, each item read by `item`; nil when one cannot be, or
-- there are more than MOST.
local function list(text, item)
  if text == '' then return {} end
  if #text > MOST * 20 then return nil end
  local out = {}
  for part in string.gmatch(text .. ',', '([^,]*),') do
    local x = item(part)
    if x == nil or #out >= MOST then return nil end
    out[#out + 1] = x
  end
  return out
end

-- An outcome as the hash keeps it: time:1 or time:0.
local function outcome(text)
  local at, ok = string.match(text, '^(%d+):([01])$')
  at = whole(at)
  if not at then return nil end
  return { at = at, ok = ok == '1' }
end

-- The hash, or a fresh state and true when it cannot be understood (a key of another type, a
-- field missing, or a value that is not what the script writes); and whether the key exists.
local function load()
  local h = redis.pcall('HGETALL', KEYS[1])
  if h.err then
    if string.find(h.err, 'WRONGTYPE', 1, true) then return fresh(), true, true end
    error(h)
  end
  if #h == 0 then return fresh(), false, false end
  local r = {}
  for i = 1, #h, 2 do r[h[i]] = h[i + 1] end
  local st = { g = whole(r.g), s = r.s, f = r.f and list(r.f, whole), u = whole(r.u),
               l = whole(r.l), o = whole(r.o), m = whole(r.m), a = whole(r.a),
               -- A hash from before the history was kept has none.
               h = list(r.h or '', outcome) }
  if not (st.g and st.f and st.u and st.l and st.o and st.m and st.a and st.h)
      or not (st.s == 'closed' or st.s == 'open' or st.s == 'half-open') then
    return fresh(), true, true
  end
  return st, false, true
end

-- The fields of the state, in one canonical form: a field the state does not use is empty
-- or 0. The failures' times and the outcomes as text; the numbers as numbers.
local function fields(st)
  local f, u, l, o, h = '', 0, 0, 0, ''
  if #st.f > 0 then
    local times = {}
    for i, at in ipairs(st.f) do times[i] = fmt(at) end
    f = table.concat(times, ',')
  end
  if st.s == 'open' then
    u, o = st.u, st.o
  elseif st.s == 'half-open' then
    l, o = st.l, st.o
  end
  if #st.h > 0 then
    local kept = {}
    for i, o in ipairs(st.h) do kept[i] = fmt(o.at) .. (o.ok and ':1' or ':0') end
    h = table.concat(kept, ',')
  end
  return st.g, st.s, f, u, l, o, st.m, st.a, h
end

-- The hash's fields and values, as HSET takes them: every value as exact text.
local NAMES = { 'g', 's', 'f', 'u', 'l', 'o', 'm', 'a', 'h' }
local function encode(st)
  local out = {}
  for i, v in ipairs({ fields(st) }) do
    out[2 * i - 1] = NAMES[i]
    out[2 * i] = type(v) == 'number' and fmt(v) or v
  end
  return out
end

-- KeyState::clamp: Breaker::clamp and Budget::clamp
local function clamp(st)
  for i, at in ipairs(st.f) do st.f[i] = math.min(at, now) end
  if st.s == 'open' then
    st.u = math.min(st.u, now + OPEN_MAX)
    st.o = math.min(st.o, OPEN_MAX)
  else
    st.l = math.min(st.l, now + LEASE + SPREAD)
    st.o = math.min(st.o, OPEN_MAX)
  end
  st.a = math.min(st.a, now)
  st.m = math.min(st.m, BURST)
  for _, o in ipairs(st.h) do o.at = math.min(o.at, now) end
  while #st.h > KEPT do table.remove(st.h, 1) end
end

-- Breaker::enter: run, probe, open (until) or probing (lease until)
local function enter(st)
  if FAILURES == 0 or st.s == 'closed' then return 'run', 0 end
  if st.s == 'open' and now < st.u then return 'open', st.u end
  if st.s == 'half-open' and now < st.l then return 'probing', st.l end
  st.s = 'half-open'
  st.l = now + LEASE
  if SPREAD > 0 then st.l = st.l + now % SPREAD end
  return 'probe', 0
end

-- Keeps the state when the operation changed it (or the hash could not be read: it is then
-- replaced whole, whatever its type), as the local store writes its file, and pushes the
-- expiry back when `touch` (a run started on the key); returns the time, the state and the
-- operation's answer (the arguments after `touch`).
local function finish(st, corrupt, write, touch, ...)
  if write then
    if corrupt then redis.call('DEL', KEYS[1]) end
    redis.call('HSET', KEYS[1], unpack(encode(st)))
    redis.call('PEXPIRE', KEYS[1], EXPIRY)
  elseif touch then
    redis.call('PEXPIRE', KEYS[1], EXPIRY)
  end
  local g, s, f, u, l, o, m, a, h = fields(st)
  return { now, corrupt and 1 or 0, g, s, f, u, l, o, m, a, h, ... }
end

local st, corrupt, exists = load()
local read = table.concat(encode(st), ' ')
clamp(st)
-- What the clamps change is written too (by every operation but the view): an open time cut to
-- today's --breaker-open-max is the one the next run honours, not only this one. A key that
-- does not exist is not written for it: its fresh state is already clamped.
local clamped = exists and table.concat(encode(st), ' ') ~= read
local op = ARGV[1]

-- KeyState::admit. Only a probe changes the state: the lease taken, the generation moved.
if op == 'admit' then
  local kind, t = enter(st)
  if kind == 'probe' then st.g = st.g + 1 end
  return finish(st, corrupt, corrupt or clamped or kind == 'probe', exists, kind, st.g, t)
end

-- What only the other operations need: defined after the admission, which every run makes,
-- so that it does not build them.

-- floor(a / b) for integers a >= 0 and b > 0: the division of doubles, corrected to the exact
-- quotient that Rust's integer division gives. At EXACT and above a double is not exact, and
-- adding 1 may not change it: no correction then, or it might never end.
local function idiv(a, b)
  local q = math.floor(a / b)
  if not (a < EXACT and q < EXACT) then return q end
  while q * b > a do q = q - 1 end
  while (q + 1) * b <= a do q = q + 1 end
  return q
end

-- History::record
local function remember(st, ok)
  st.h[#st.h + 1] = { at = now, ok = ok }
  while #st.h > KEPT do table.remove(st.h, 1) end
end

-- Budget::refill
local function refill(st)
  local period = math.max(REFILL, 1)
  local passed = math.max(now - st.a, 0)
  local gained = idiv(passed * MILLI, period)
  st.m = st.m + gained
  if st.m >= BURST then
    st.m = BURST
    st.a = math.max(st.a, now)
  else
    st.a = st.a + math.min(idiv(gained * period, MILLI), passed)
  end
end

-- Budget::take
local function take(st)
  if BURST == 0 then return true end
  refill(st)
  if st.m >= MILLI then
    st.m = st.m - MILLI
    return true
  end
  return false
end

-- Budget::succeeded
local function succeeded(st)
  if BURST > 0 then
    refill(st)
    st.m = math.min(st.m + RATIO, BURST)
  end
end

-- Breaker::open, after the failures `failures`
local function open(st, open_for, u, failures)
  local cut = math.floor(open_for * 0.2 * math.max(0, math.min(1, u)))
  st.s = 'open'
  st.u = now + open_for - math.min(cut, open_for)
  st.o = open_for
  st.f = failures
  return 'opened'
end

-- Breaker::record
local function record(st, probe, result, u)
  if FAILURES == 0 then return 'none' end
  if st.s == 'half-open' and probe then
    if result == 'success' then
      st.s = 'closed'
      st.f = {}
      return 'closed'
    elseif result == 'failure' then
      return open(st, math.min(st.o * 2, OPEN_MAX), u, { now })
    end
    st.s = 'open'
    st.u = now
    return 'released'
  elseif st.s == 'closed' and not probe then
    if result == 'success' then
      st.f = {}
    elseif result == 'failure' then
      local since = math.max(now - WINDOW, 0)
      local kept = {}
      for _, at in ipairs(st.f) do
        if at >= since then kept[#kept + 1] = at end
      end
      kept[#kept + 1] = now
      while #kept > FAILURES do table.remove(kept, 1) end
      st.f = kept
      if #kept >= FAILURES then return open(st, FIRST_OPEN, u, kept) end
    end
  end
  return 'none'
end

-- KeyState::refusal: none, open (until) or probing (lease until); a closed breaker moves the
-- ticket to the current generation.
local function refusal(st, ticket)
  if FAILURES == 0 then return 'none', 0 end
  if st.s == 'closed' then
    ticket.g = st.g
    ticket.p = 0
    return 'none', 0
  end
  if st.s == 'open' then return 'open', st.u end
  return 'probing', st.l
end

-- KeyState::after_attempt
if op == 'after' then
  local before = table.concat(encode(st), ' ')
  local ticket = { g = tonumber(ARGV[12]), p = tonumber(ARGV[13]) }
  local result = ARGV[14]
  local change = 'none'
  if ticket.g == st.g then
    change = record(st, ticket.p == 1, result, tonumber(ARGV[16]))
    if change ~= 'none' then
      st.g = st.g + 1
      if change == 'closed' then
        ticket.g = st.g
        ticket.p = 0
      end
    end
  end
  if result == 'success' then succeeded(st) end
  if ARGV[17] == '1' and result ~= 'uncounted' then remember(st, result == 'success') end
  local why, t = 'none', 0
  if ARGV[15] == '1' then
    why, t = refusal(st, ticket)
    if why == 'none' and not take(st) then why = 'budget' end
  end
  local changed = corrupt or clamped or table.concat(encode(st), ' ') ~= before
  return finish(st, corrupt, changed, false, ticket.g, ticket.p, change, why, t)
end

-- KeyState::before_retry: reads only (and writes what the clamps changed).
if op == 'before' then
  local ticket = { g = tonumber(ARGV[12]), p = tonumber(ARGV[13]) }
  local why, t = refusal(st, ticket)
  return finish(st, corrupt, corrupt or clamped, false, why, t, ticket.g, ticket.p)
end

-- KeyState::view, for --explain: changes nothing, not even a hash that cannot be read.
return finish(st, corrupt, false, false)
