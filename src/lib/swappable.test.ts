import assert from "node:assert/strict";
import { test } from "node:test";
import { Swappable } from "./swappable.ts";

/** A Swappable of names whose retirements are listed in order. */
function names(first: string) {
  const retired: string[] = [];
  const box = new Swappable(first, async (name) => {
    retired.push(name);
  });
  return { box, retired };
}

test("new users get the newest value; a user keeps the one it started with", () => {
  const { box } = names("a");
  const held = box.hold();
  box.replace("b");
  assert.equal(held.value, "a");
  assert.equal(box.current, "b");
  assert.equal(box.hold().value, "b");
});

test("a replaced value is retired once its last user lets go, not before", () => {
  const { box, retired } = names("a");
  const one = box.hold();
  const two = box.hold();
  box.replace("b");
  assert.deepEqual(retired, []);
  one.release();
  one.release(); // a second release does not count twice
  assert.deepEqual(retired, [], "still held by the second user");
  two.release();
  assert.deepEqual(retired, ["a"]);
});

test("a value nobody holds is retired when replaced; the newest only by close()", async () => {
  const { box, retired } = names("a");
  box.hold().release();
  box.replace("b");
  assert.deepEqual(retired, ["a"]);
  box.replace("c");
  assert.deepEqual(retired, ["a", "b"]);
  await box.close();
  assert.deepEqual(retired, ["a", "b", "c"]);
});

test("close() waits for retirements under way", async () => {
  let finish = () => {};
  const slow = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const done: string[] = [];
  const box = new Swappable("a", async (name) => {
    if (name === "a") await slow;
    done.push(name);
  });
  box.replace("b");
  let closed = false;
  const closing = box.close().then(() => {
    closed = true;
  });
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(closed, false, "a's retirement is still under way");
  finish();
  await closing;
  assert.deepEqual(done.sort(), ["a", "b"]);
});
