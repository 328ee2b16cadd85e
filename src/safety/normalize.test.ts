import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { normalizeText } from "./normalize.ts";

describe("normalizeText", () => {
  test("NFKC: full-width, ligatures, circled, mathematical and superscript forms become plain", () => {
    assert.equal(normalizeText("ＢＯＭＢ"), "bomb");
    assert.equal(normalizeText("ﬁre ﬂame"), "fire flame");
    assert.equal(normalizeText("ⓑⓞⓜⓑ"), "bomb");
    assert.equal(normalizeText("𝐛𝐨𝐦𝐛 𝕓𝕠𝕞𝕓 𝖇𝖔𝖒𝖇"), "bomb bomb bomb");
    assert.equal(normalizeText("x² ①"), "x2 1");
    assert.equal(normalizeText("a\u00A0b"), "a b");
  });

  test("combining marks are removed, precomposed or not, however many", () => {
    assert.equal(normalizeText("bómb"), "bomb");
    assert.equal(normalizeText("bo\u0301mb"), "bomb");
    assert.equal(normalizeText("phở Ångström naïve"), "pho angstrom naive");
    // Zalgo: stacks of combining marks on every letter
    assert.equal(normalizeText("b̸̡̛o̵͝͠m̶̢̧b̷͇̈"), "bomb");
  });

  test("the vowel signs of Indic and South-East Asian scripts are kept", () => {
    for (const word of ["किताब", "কিতাব", "புத்தகம்", "หนังสือ"])
      assert.equal(normalizeText(word), word.normalize("NFKC"), word);
    // Hebrew and Arabic vowel points are optional in writing, so they go
    assert.equal(normalizeText("שָׁלוֹם"), "שלום");
    assert.equal(normalizeText("كِتَاب"), "كتاب");
  });

  test("case folding, including ß, final sigma and the dotted capital I", () => {
    assert.equal(normalizeText("STRASSE"), "strasse");
    assert.equal(normalizeText("Straße"), "strasse");
    assert.equal(normalizeText("STRAẞE"), "strasse");
    assert.equal(normalizeText("ΟΔΟΣ"), normalizeText("οδος"));
    assert.equal(normalizeText("İstanbul"), "istanbul");
  });

  test("invisible characters are removed", () => {
    const invisibles = [
      "\u200B", // zero-width space
      "\u200C", // zero-width non-joiner
      "\u200D", // zero-width joiner
      "\u200E", // left-to-right mark
      "\u200F", // right-to-left mark
      "\u2060", // word joiner
      "\u2061", // function application
      "\u2062", // invisible times
      "\u2063", // invisible separator
      "\u2064", // invisible plus
      "\uFEFF", // byte order mark
      "\u00AD", // soft hyphen
      "\uFE0F", // variation selector 16
      "\u{E0101}", // variation selector 18
      "\u202E", // right-to-left override
      "\u2066", // left-to-right isolate
      "\u061C", // Arabic letter mark
      "\u180E", // Mongolian vowel separator
      "\u034F", // combining grapheme joiner
      "\u3164", // Hangul filler
      "\u{E0041}", // tag latin capital A
      "\u0001", // a control character
      "\u007F", // delete
    ];
    for (const c of invisibles) {
      const code = c.codePointAt(0)!.toString(16);
      assert.equal(normalizeText(`bo${c}mb`), "bomb", `U+${code}`);
      assert.equal(normalizeText(`${c}b${c}o${c}m${c}b${c}`), "bomb", `U+${code} everywhere`);
    }
  });

  test("whitespace control characters stay: they separate words", () => {
    assert.equal(normalizeText("a\tb\nc\r\nd"), "a\tb\nc\r\nd");
  });

  test("look-alikes: Cyrillic and Greek letters in a mixed word become Latin", () => {
    assert.equal(normalizeText("bоmb"), "bomb"); // Cyrillic о
    assert.equal(normalizeText("BΟMB"), "bomb"); // Greek Ο
    assert.equal(normalizeText("Вomb"), "bomb"); // Cyrillic capital В looks like B
    assert.equal(normalizeText("рауpаl"), "paypal"); // mostly Cyrillic, one Latin y
    assert.equal(normalizeText("b.о.m.b"), "b.o.m.b"); // a spelled-out run counts as one word
    // in lower case в does not look like b: left alone
    assert.equal(normalizeText("вomb"), "вomb");
  });

  test("look-alikes: words in one script keep their letters", () => {
    assert.equal(normalizeText("сор рас"), "сор рас");
    assert.equal(normalizeText("Я купил iPhone у друга"), "я купил iphone у друга");
    assert.equal(normalizeText("ΟΧΙ"), "οχι");
  });

  test("is idempotent", () => {
    // a deterministic pseudo-random mix of the characters every step touches
    const alphabet = [..."aBc É ß ς Σ İ ﬁ ｂ ① о В Ο 中文 ก็ \u200B\u00AD\u0301\uFE0F .-_ \n"];
    let seed = 42;
    const random = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed / 0x7fffffff;
    };
    for (let i = 0; i < 5_000; i++) {
      let s = "";
      for (let j = 0; j < 20; j++) s += alphabet[Math.floor(random() * alphabet.length)];
      const once = normalizeText(s);
      assert.equal(normalizeText(once), once, JSON.stringify(s));
    }
  });
});
