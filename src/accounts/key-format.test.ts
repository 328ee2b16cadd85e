import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { describe, test } from "node:test";
import {
  base62,
  generateKey,
  hashKey,
  looksLikeKey,
  newId,
  newRequestId,
  parseBearer,
} from "./key-format.ts";

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** Reference base62: the digits of the big-endian number, most significant first. */
function referenceBase62(bytes: Uint8Array): string {
  let n = 0n;
  for (const b of bytes) n = n * 256n + BigInt(b);
  let out = "";
  do {
    out = ALPHABET[Number(n % 62n)] + out;
    n /= 62n;
  } while (n > 0n);
  return out;
}

describe("base62", () => {
  test("small values map to single digits of the 0-9A-Za-z alphabet", () => {
    assert.equal(base62(Uint8Array.of(0), 1), "0");
    assert.equal(base62(Uint8Array.of(9), 1), "9");
    assert.equal(base62(Uint8Array.of(10), 1), "A");
    assert.equal(base62(Uint8Array.of(35), 1), "Z");
    assert.equal(base62(Uint8Array.of(36), 1), "a");
    assert.equal(base62(Uint8Array.of(61), 1), "z");
    assert.equal(base62(Uint8Array.of(62), 1), "10");
    assert.equal(base62(Uint8Array.of(1, 0), 1), "48"); // 256 = 4*62 + 8
  });

  test("pads with leading zeros to the width", () => {
    assert.equal(base62(Uint8Array.of(0), 5), "00000");
    assert.equal(base62(new Uint8Array(0), 4), "0000");
    assert.equal(base62(Uint8Array.of(61), 3), "00z");
    assert.equal(base62(new Uint8Array(32), 43), "0".repeat(43));
  });

  test("32 bytes always fit in 43 digits, and the largest value needs all 43", () => {
    const max = new Uint8Array(32).fill(0xff);
    const out = base62(max, 43);
    assert.equal(out.length, 43);
    assert.notEqual(out[0], "0");
    assert.equal(out, referenceBase62(max));
  });

  test("agrees with a reference conversion on random inputs", () => {
    for (let i = 0; i < 200; i++) {
      const bytes = new Uint8Array(1 + (i % 40));
      for (let j = 0; j < bytes.length; j++) bytes[j] = (i * 31 + j * 97 + ((i * j) % 13)) & 0xff;
      const width = 60;
      const out = base62(bytes, width);
      assert.equal(out.length, width);
      assert.match(out, /^[0-9A-Za-z]+$/);
      assert.equal(out.replace(/^0+(?=.)/, ""), referenceBase62(bytes));
    }
  });
});

describe("generateKey", () => {
  test("secret is sk- and 43 base62 characters; hash and prefix derive from it", () => {
    const { secret, hash, prefix } = generateKey();
    assert.match(secret, /^sk-[0-9A-Za-z]{43}$/);
    assert.equal(hash, createHash("sha256").update(secret).digest("hex"));
    assert.match(hash, /^[0-9a-f]{64}$/);
    assert.equal(prefix, secret.slice(0, 9));
    assert.match(prefix, /^sk-[0-9A-Za-z]{6}$/);
    assert.ok(!prefix.includes(secret.slice(9)), "the prefix does not carry the rest of the secret");
  });

  test("keys are unique and use the whole alphabet", () => {
    const secrets = new Set<string>();
    const hashes = new Set<string>();
    const seen = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const k = generateKey();
      secrets.add(k.secret);
      hashes.add(k.hash);
      for (const c of k.secret.slice(3)) seen.add(c);
    }
    assert.equal(secrets.size, 2000);
    assert.equal(hashes.size, 2000);
    // 2000 × 43 random base62 digits: every digit of the alphabet shows up.
    assert.equal(seen.size, 62);
    for (const c of seen) assert.ok(ALPHABET.includes(c));
  });

  test("every generated key passes looksLikeKey", () => {
    for (let i = 0; i < 100; i++) assert.ok(looksLikeKey(generateKey().secret));
  });
});

describe("hashKey", () => {
  test("is the hex SHA-256 of the whole key", () => {
    assert.equal(hashKey("sk-abc"), createHash("sha256").update("sk-abc").digest("hex"));
    assert.equal(hashKey(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  });

  test("differs for keys differing in one character and is stable", () => {
    assert.notEqual(hashKey("sk-aaaa"), hashKey("sk-aaab"));
    assert.equal(hashKey("sk-aaaa"), hashKey("sk-aaaa"));
  });

  test("hashes UTF-8 bytes", () => {
    assert.equal(hashKey("sk-é"), createHash("sha256").update(Buffer.from("sk-é", "utf8")).digest("hex"));
  });
});

describe("newId", () => {
  test("has the kind prefix and 14 base62 characters, and is unique", () => {
    const ids = new Set<string>();
    for (const kind of ["acc", "key", "req"] as const) {
      for (let i = 0; i < 500; i++) {
        const id = newId(kind);
        assert.match(id, new RegExp(`^${kind}_[0-9A-Za-z]{14}$`));
        ids.add(id);
      }
    }
    assert.equal(ids.size, 1500);
  });
});

describe("newRequestId", () => {
  test("req_, 9 base36 characters of time and 11 base62 random ones, unique", () => {
    const ids = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const id = newRequestId(1_795_640_000_000);
      assert.match(id, /^req_[0-9a-z]{9}[0-9A-Za-z]{11}$/);
      ids.add(id);
    }
    assert.equal(ids.size, 2000, "one millisecond, 2000 distinct ids");
  });

  test("ids made later sort later, byte-wise and by a locale's collation (PostgreSQL's text order)", () => {
    // times whose base36 digits cross the digit/letter boundary and carry into higher places
    const times = [0, 9, 10, 35, 36, 1_295, 1_296, 1_795_640_000_000, 1_795_640_000_001, 2 ** 45];
    const ids = times.map((t) => newRequestId(t));
    const shuffled = [...ids].reverse();
    assert.deepEqual([...shuffled].sort(), ids);
    assert.deepEqual(
      [...shuffled].sort((a, b) => a.localeCompare(b, "en-US")),
      ids,
    );
  });
});

describe("parseBearer", () => {
  test("reads the token of a Bearer header", () => {
    assert.deepEqual(parseBearer("Bearer sk-abc"), { kind: "token", token: "sk-abc" });
  });

  test("the scheme is case-insensitive", () => {
    for (const scheme of ["bearer", "BEARER", "BeArEr"])
      assert.deepEqual(parseBearer(`${scheme} sk-abc`), { kind: "token", token: "sk-abc" });
  });

  test("surrounding spaces around the token are trimmed", () => {
    assert.deepEqual(parseBearer("Bearer   sk-abc  "), { kind: "token", token: "sk-abc" });
  });

  test("a token that is not one of ours is still returned (answered as unknown later)", () => {
    assert.deepEqual(parseBearer("Bearer not-a-key"), { kind: "token", token: "not-a-key" });
    assert.deepEqual(parseBearer("Bearer a b"), { kind: "token", token: "a b" });
  });

  test("missing header counts as missing", () => {
    assert.deepEqual(parseBearer(undefined), { kind: "missing" });
  });

  test("a repeated header (array) counts as missing", () => {
    assert.deepEqual(parseBearer(["Bearer sk-a", "Bearer sk-b"]), { kind: "missing" });
  });

  test("other schemes count as missing", () => {
    assert.deepEqual(parseBearer("Basic dXNlcjpwYXNz"), { kind: "missing" });
    assert.deepEqual(parseBearer("Token sk-abc"), { kind: "missing" });
    assert.deepEqual(parseBearer("Bearerx sk-abc"), { kind: "missing" });
    assert.deepEqual(parseBearer("sk-abc"), { kind: "missing" });
  });

  test("empty or scheme-only values count as missing", () => {
    for (const h of ["", " ", "Bearer", "Bearer ", "Bearer    ", " Bearer sk-abc"])
      assert.deepEqual(parseBearer(h), { kind: "missing" }, JSON.stringify(h));
  });
});

describe("looksLikeKey", () => {
  test("accepts sk- followed by letters, digits, _ and -", () => {
    assert.ok(looksLikeKey("sk-abc"));
    assert.ok(looksLikeKey("sk-ABC_def-123"));
    assert.ok(looksLikeKey(`sk-${"a".repeat(43)}`));
  });

  test("length is capped at 200 characters", () => {
    assert.ok(looksLikeKey(`sk-${"a".repeat(197)}`));
    assert.ok(!looksLikeKey(`sk-${"a".repeat(198)}`));
    assert.ok(!looksLikeKey(`sk-${"a".repeat(100_000)}`));
  });

  test("refuses other shapes and characters", () => {
    for (const t of [
      "",
      "sk-",
      "sk",
      "SK-abc",
      "pk-abc",
      "abc",
      " sk-abc",
      "sk-abc ",
      "sk-a b",
      "sk-abc.def",
      "sk-abc/def",
      "sk-abc+def=",
      "sk-é",
      "sk-abc\n",
      "sk-abc\u0000",
    ])
      assert.ok(!looksLikeKey(t), JSON.stringify(t));
  });
});
