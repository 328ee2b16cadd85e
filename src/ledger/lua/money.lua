-- src/ledger/money.ts in Lua, on the same doubles as JavaScript: every ledger sizes a hold to
-- the same token and nanodollar. h: a subject's fields (see fields in state.lua).
local function nanosFor(fixed, per, prompt, t) return fixed + math.ceil(math.max(0, t - prompt) * per) end
local function tokensFor(fixed, per, prompt, n)
  if n < fixed then return -1 end
  if per <= 0 then return math.huge end
  local t = prompt + math.floor((n - fixed) / per)
  while t > prompt and nanosFor(fixed, per, prompt, t) > n do t = t - 1 end
  return t
end
local function budgetLeft(h, budget, period, month)
  if budget < 0 then return nil end
  if period == 'month' then
    if h[5] == month then return budget - tonumber(h[4]) end
    return budget
  end
  return budget - tonumber(h[3])
end
