import { type Kysely, PostgresAdapter, sql } from "kysely";

// The quota ledger shared by every instance on PostgreSQL (issue #9). The counters of the
// truth stay where they were (used_tokens, updated with the records); beside them the tokens
// held by calls in flight, each hold a row leased by the instance that made it, and the
// requests waiting for held tokens, in arrival order. Each step is one function call: one
// round trip, atomic under the row locks of the key and the account (always the key first,
// keys and accounts each in id order, as the record writer locks them, so no two
// transactions wait on each other in a cycle). SQLite serves one process, whose ledger is in
// memory: it gets the columns only.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable("accounts")
    .addColumn("reserved_tokens", "bigint", (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable("api_keys")
    .addColumn("reserved_tokens", "bigint", (c) => c.notNull().defaultTo(0))
    .execute();
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;

  await sql`
    create table ledger_instances (
      id text primary key,
      started_at bigint not null,
      heartbeat_at bigint not null,
      -- whether it shares rate limits through Redis
      redis integer not null default 0
    )`.execute(db);
  await sql`
    create table ledger_reservations (
      id bigserial primary key,
      instance_id text not null,
      -- with Redis: the hold's id in Redis (its instance's own numbering); null on PostgreSQL alone
      hold bigint,
      account_id text not null,
      key_id text not null,
      tokens bigint not null,
      created_at bigint not null
    )`.execute(db);
  await sql`create index ledger_reservations_instance on ledger_reservations (instance_id)`.execute(db);
  await sql`
    create table ledger_waiters (
      id bigserial primary key,
      instance_id text not null,
      account_id text not null,
      key_id text not null,
      expires_at bigint not null
    )`.execute(db);
  await sql`create index ledger_waiters_account on ledger_waiters (account_id)`.execute(db);
  await sql`create index ledger_waiters_key on ledger_waiters (key_id)`.execute(db);

  // The store's clock, so instances whose clocks differ agree on leases and waits.
  await sql`
    create function gateway_ledger_now() returns bigint language sql volatile as $$
      select (extract(epoch from clock_timestamp()) * 1000)::bigint
    $$`.execute(db);

  // Wakes the instances waiting on this account or key, if any wait: NOTIFY is sent on commit.
  await sql`
    create function gateway_ledger_notify(p_account text, p_key text) returns void language plpgsql as $$
    begin
      if exists (select 1 from ledger_waiters where account_id = p_account or key_id = p_key) then
        perform pg_notify('gateway_ledger', p_account || ' ' || p_key);
      end if;
    end $$`.execute(db);

  // Holds between p_minimum and p_wanted tokens, or says why not:
  //   ok       tokens held (reservation_id)
  //   refused  what consumption leaves (remaining) is below p_minimum
  //   held     calls in flight hold the room, and the caller does not wait (p_wait_ms = 0)
  //   wait     calls in flight hold the room, or older waiters come first: the caller waits
  //            as waiter_id (the same id on its next attempt keeps its place in the queue)
  // The key's limit and the account's own quota are read from their rows, so a change takes
  // effect at once; p_plan_quota applies to accounts without their own.
  await sql.raw(RESERVE_TOKENS).execute(db);

  await sql`
    create function gateway_unwait(p_waiter bigint) returns void language plpgsql as $$
    declare
      w record;
    begin
      delete from ledger_waiters where id = p_waiter returning account_id, key_id into w;
      if found then perform gateway_ledger_notify(w.account_id, w.key_id); end if;
    end $$`.execute(db);

  // Closes holds and charges: the holds p_ids are deleted (those still there: a hold released
  // by a sweep is not released twice) and their tokens no longer reserved; p_keys and
  // p_accounts are charged p_key_used and p_account_used. Called by the record writer in the
  // transaction that inserts the records, and to release holds (no charges).
  await sql.raw(CLOSE_TOKENS).execute(db);

  // Releases the holds of instances that stopped renewing their lease (crashed, cut off):
  // their committed records stay; what they held is free again. Returns the tokens released.
  await sql`
    create function gateway_ledger_sweep(p_lease_ms bigint) returns bigint language plpgsql as $$
    declare
      now_ms bigint := gateway_ledger_now();
      ids bigint[];
    begin
      delete from ledger_instances where heartbeat_at < now_ms - p_lease_ms;
      select coalesce(array_agg(r.id), '{}') into ids from ledger_reservations r
        where not exists (select 1 from ledger_instances i where i.id = r.instance_id);
      delete from ledger_waiters where expires_at < now_ms - p_lease_ms;
      if cardinality(ids) = 0 then return 0; end if;
      return gateway_ledger_close(ids, '{}', '{}', '{}', '{}');
    end $$`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    for (const fn of [
      "gateway_ledger_sweep(bigint)",
      "gateway_ledger_close(bigint[], text[], bigint[], text[], bigint[])",
      "gateway_unwait(bigint)",
      "gateway_reserve(text, text, text, bigint, bigint, bigint, bigint, bigint)",
      "gateway_ledger_notify(text, text)",
      "gateway_ledger_now()",
    ])
      await sql.raw(`drop function ${fn}`).execute(db);
    await sql`drop table ledger_waiters`.execute(db);
    await sql`drop table ledger_reservations`.execute(db);
    await sql`drop table ledger_instances`.execute(db);
  }
  await db.schema.alterTable("api_keys").dropColumn("reserved_tokens").execute();
  await db.schema.alterTable("accounts").dropColumn("reserved_tokens").execute();
}

// gateway_reserve and gateway_ledger_close as this migration made them (tokens only), also
// for migration 015's down.
export const RESERVE_TOKENS = `    create or replace function gateway_reserve(
      p_instance text, p_account text, p_key text, p_plan_quota bigint,
      p_wanted bigint, p_minimum bigint, p_waiter bigint, p_wait_ms bigint)
    returns table (status text, tokens bigint, remaining bigint, reason text,
                   reservation_id bigint, waiter_id bigint, key_used bigint, account_used bigint)
    language plpgsql as $$
    declare
      k record;
      a record;
      now_ms bigint := gateway_ledger_now();
      key_free bigint;
      account_free bigint;
      free bigint;
      room bigint;
      why text;
      got bigint;
      rid bigint;
      wid bigint := p_waiter;
    begin
      select limit_tokens, used_tokens, reserved_tokens into k from api_keys where id = p_key for update;
      select coalesce(quota_tokens, p_plan_quota) as quota, used_tokens, reserved_tokens into a
        from accounts where id = p_account for update;
      account_free := a.quota - a.used_tokens;
      key_free := k.limit_tokens - k.used_tokens;
      free := least(account_free, coalesce(key_free, account_free));
      why := case when key_free < account_free then 'key_limit' else 'quota' end;
      if free < p_minimum then
        if wid is not null then
          delete from ledger_waiters where id = wid;
          perform gateway_ledger_notify(p_account, p_key);
        end if;
        return query select 'refused', 0::bigint, greatest(free, 0), why, null::bigint, null::bigint,
          k.used_tokens, a.used_tokens;
        return;
      end if;
      room := least(account_free - a.reserved_tokens,
                    coalesce(key_free - k.reserved_tokens, account_free - a.reserved_tokens));
      if room >= p_minimum and not exists (
        select 1 from ledger_waiters w
        where (w.account_id = p_account or w.key_id = p_key) and w.expires_at > now_ms
          and (wid is null or w.id < wid)
      ) then
        got := least(p_wanted, room);
        update api_keys set reserved_tokens = reserved_tokens + got where id = p_key;
        update accounts set reserved_tokens = reserved_tokens + got where id = p_account;
        insert into ledger_reservations (instance_id, account_id, key_id, tokens, created_at)
          values (p_instance, p_account, p_key, got, now_ms) returning id into rid;
        if wid is not null then
          delete from ledger_waiters where id = wid;
          -- the next in line may fit in what is left
          perform gateway_ledger_notify(p_account, p_key);
        end if;
        return query select 'ok', got, free, why, rid, null::bigint, k.used_tokens, a.used_tokens;
        return;
      end if;
      if p_wait_ms <= 0 then
        if wid is not null then delete from ledger_waiters where id = wid; end if;
        return query select 'held', 0::bigint, free, why, null::bigint, null::bigint, k.used_tokens, a.used_tokens;
        return;
      end if;
      if wid is null then
        insert into ledger_waiters (instance_id, account_id, key_id, expires_at)
          values (p_instance, p_account, p_key, now_ms + p_wait_ms) returning id into wid;
      else
        update ledger_waiters set expires_at = now_ms + p_wait_ms where id = wid;
      end if;
      return query select 'wait', 0::bigint, free, why, null::bigint, wid, k.used_tokens, a.used_tokens;
    end $$`;

export const CLOSE_TOKENS = `    create or replace function gateway_ledger_close(
      p_ids bigint[], p_keys text[], p_key_used bigint[], p_accounts text[], p_account_used bigint[])
    returns bigint language plpgsql as $$
    declare
      r record;
      g_keys text[];
      g_accounts text[];
      g_tokens bigint[];
    begin
      with gone as (delete from ledger_reservations where id = any(p_ids) returning key_id, account_id, tokens)
        select coalesce(array_agg(key_id), '{}'), coalesce(array_agg(account_id), '{}'),
               coalesce(array_agg(tokens), '{}')
          into g_keys, g_accounts, g_tokens from gone;
      for r in
        select id, sum(used) as used, sum(held) as held from (
          select unnest(p_keys) as id, unnest(p_key_used) as used, 0::bigint as held
          union all select unnest(g_keys), 0::bigint, unnest(g_tokens)
        ) x group by id order by id
      loop
        update api_keys set used_tokens = used_tokens + r.used, reserved_tokens = reserved_tokens - r.held
          where id = r.id;
      end loop;
      for r in
        select id, sum(used) as used, sum(held) as held from (
          select unnest(p_accounts) as id, unnest(p_account_used) as used, 0::bigint as held
          union all select unnest(g_accounts), 0::bigint, unnest(g_tokens)
        ) x group by id order by id
      loop
        update accounts set used_tokens = used_tokens + r.used, reserved_tokens = reserved_tokens - r.held
          where id = r.id;
      end loop;
      for r in select distinct k, a from unnest(g_keys, g_accounts) as u(k, a) loop
        perform gateway_ledger_notify(r.a, r.k);
      end loop;
      return coalesce((select sum(t) from unnest(g_tokens) as t), 0);
    end $$`;
