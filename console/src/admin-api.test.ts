import assert from "node:assert/strict";
import { afterEach, test } from "node:test";
import { adminUrl, fetchAll, recordsExportUrl } from "./admin-api.ts";
import { ApiError } from "./api.ts";

const realFetch = globalThis.fetch;
afterEach(() => {
  globalThis.fetch = realFetch;
});

/** fetch() answering from `pages` by the cursor asked for, noting each URL. */
function serve(pages: Record<string, unknown>, asked: string[]) {
  globalThis.fetch = (async (url: string | URL) => {
    asked.push(String(url));
    const cursor = new URL(String(url), "http://gateway").searchParams.get("cursor") ?? "";
    const page = pages[cursor];
    if (!page)
      return new Response(
        JSON.stringify({
          error: { message: "no such page", type: "x", param: "cursor", code: "invalid_request" },
        }),
        {
          status: 400,
        },
      );
    return new Response(JSON.stringify(page), { status: 200 });
  }) as typeof fetch;
}

test("a whole list is every page, followed by its cursor", async () => {
  const asked: string[] = [];
  serve(
    {
      "": { object: "list", data: [1, 2], has_more: true, next_cursor: "c2" },
      c2: { object: "list", data: [3], has_more: true, next_cursor: "c3" },
      c3: { object: "list", data: [4], has_more: false, next_cursor: null },
    },
    asked,
  );
  const all = await fetchAll<number>("/keys");
  assert.deepEqual(all.data, [1, 2, 3, 4]);
  assert.equal(all.has_more, false);
  assert.deepEqual(asked, ["/admin/v1/keys", "/admin/v1/keys?cursor=c2", "/admin/v1/keys?cursor=c3"]);
});

test("a refused page is the envelope's error, naming its field", async () => {
  serve({}, []);
  await assert.rejects(fetchAll("/keys"), (err: unknown) => {
    assert.ok(err instanceof ApiError);
    assert.deepEqual(
      [err.status, err.code, err.param, err.message],
      [400, "invalid_request", "cursor", "no such page"],
    );
    return true;
  });
});

test("admin URLs carry only the filters given, and no account scope of the console's", () => {
  assert.equal(
    adminUrl("/usage", { from: 1, to: 2, group_by: "day", model: "", account: undefined }),
    "/admin/v1/usage?from=1&to=2&group_by=day",
  );
  assert.equal(
    recordsExportUrl({ status: "error", request_id: undefined, from: 5 }, "jsonl"),
    "/admin/v1/records/export?status=error&from=5&format=jsonl",
  );
});
