-- How the ledger's scripts read and write its state in Redis (see redis-ledger.ts).

-- Integers as Redis reads them: Lua would print 1e15 as "1e+15".
local function int(x) return string.format('%d', x) end

-- A subject's (account's, key's or capped session's) fields, in the order the scripts read
-- them: consumption u, holds r, spending in nanodollars st in total and sm in the month mk
-- (a session's budget counts st alone), money its holds hold rn.
local function fields(subject) return redis.call('HMGET', subject, 'u', 'r', 'st', 'sm', 'mk', 'rn') end

-- A hold: account, key, tokens, counted in the account, in the key ('1' or '0'), nanodollars
-- held against the account's budget, against the key's; then, for a hold under a capped
-- agent session only, the session, counted in it, nanodollars held against its budget.
local HOLD = '^(%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+)'
local HOLD_SESSION = '^%S+ %S+ %S+ %S+ %S+ %S+ %S+ (%S+) (%S+) (%S+)$'

-- An account or key nothing holds expires a day later: the next call that needs it seeds it
-- again from the store.
local SUBJECT_TTL_MS = 86400000
