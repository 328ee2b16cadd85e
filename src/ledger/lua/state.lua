-- How the ledger's scripts read and write its state in Redis (see redis-ledger.ts).

-- Integers as Redis reads them: Lua would print 1e15 as "1e+15".
local function int(x) return string.format('%d', x) end

-- A subject's (account's or key's) fields, in the order the scripts read them: consumption u,
-- holds r, spending in nanodollars st in total and sm in the month mk, money its holds hold rn.
local function fields(subject) return redis.call('HMGET', subject, 'u', 'r', 'st', 'sm', 'mk', 'rn') end

-- A hold: account, key, tokens, counted in the account, in the key ('1' or '0'), nanodollars
-- held against the account's budget, against the key's.
local HOLD = '^(%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+)$'

-- An account or key nothing holds expires a day later: the next call that needs it seeds it
-- again from the store.
local SUBJECT_TTL_MS = 86400000
