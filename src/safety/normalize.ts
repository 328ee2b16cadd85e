// Text normalisation for the rules reviewer. Operators list words and phrases; callers and
// models try to slip them past with look-alike characters, accents, invisible characters and
// letters spelled out with separators. Both the configured terms and the reviewed text go
// through the same steps, so a term matches whatever way it is written (./term-matcher.ts
// matches them on the result):
//
//   1. NFKC: full-width, ligatures, circled and mathematical letters become plain ones.
//   2. Look-alikes: in a word that mixes Latin with Cyrillic or Greek letters, the Cyrillic and
//      Greek letters that look like Latin ones become Latin ("bоmb" with a Cyrillic о). A run of
//      one-letter words counts as one word here ("b.о.m.b"). Words written in one script are
//      left alone, so Russian or Greek text keeps its meaning.
//   3. Case folding: lower case, plus ß -> ss and final ς -> σ.
//   4. Combining marks are removed ("bómb" -> "bomb", Zalgo text), except the vowel signs of the
//      Indic and South-East Asian scripts, without which different words would become one.
//   5. Invisible characters (format characters such as zero-width spaces and joiners, the soft
//      hyphen, bidi controls, tags, other default-ignorable code points, control characters
//      other than whitespace) are removed.

/** Stands for a run of invisible characters between normalisation and scanning. */
const INVISIBLE_MARK = "\u0000";

/** Format, default-ignorable and control characters; whitespace controls stay separators. */
const INVISIBLE_SET = String.raw`[[\p{Cf}\p{Default_Ignorable_Code_Point}\p{Cc}]--[\t\n\v\f\r\x85]]`;
const INVISIBLE_RUN = new RegExp(`${INVISIBLE_SET}+`, "gv");

/** Marks whose removal would merge different words: vowel signs and viramas of these scripts. */
const STRIP_MARKS =
  /[\p{M}--[\p{sc=Devanagari}\p{sc=Bengali}\p{sc=Gurmukhi}\p{sc=Gujarati}\p{sc=Oriya}\p{sc=Tamil}\p{sc=Telugu}\p{sc=Kannada}\p{sc=Malayalam}\p{sc=Sinhala}\p{sc=Thai}\p{sc=Lao}\p{sc=Tibetan}\p{sc=Myanmar}\p{sc=Khmer}\p{sc=Javanese}\p{sc=Balinese}]]/gv;

/** A word for the look-alike step: letters, digits, marks and invisibles between them. */
const WORD_RUN = new RegExp(String.raw`[\p{L}\p{N}\p{M}${INVISIBLE_SET}]+`, "gv");
const HAS_LATIN = /\p{sc=Latin}/u;
const HAS_CYRILLIC_OR_GREEK = /[\p{sc=Cyrillic}\p{sc=Greek}]/u;
const CYRILLIC_OR_GREEK = /[\p{sc=Cyrillic}\p{sc=Greek}]/gu;

/**
 * Cyrillic and Greek letters that look like a Latin letter of the same case (a subset of
 * Unicode's confusables, UTS #39). Mapped before case folding, because some look alike only
 * in one case (Cyrillic В is B, but в is not b).
 */
const LOOKALIKES = new Map<string, string>(
  Object.entries({
    // Cyrillic capitals
    А: "A",
    В: "B",
    Е: "E",
    К: "K",
    М: "M",
    Н: "H",
    О: "O",
    Р: "P",
    С: "C",
    Т: "T",
    У: "Y",
    Х: "X",
    Ѕ: "S",
    І: "I",
    Ј: "J",
    Ү: "Y",
    Ԛ: "Q",
    Ԝ: "W",
    Ӏ: "I",
    // Cyrillic small letters
    а: "a",
    е: "e",
    о: "o",
    р: "p",
    с: "c",
    у: "y",
    х: "x",
    ѕ: "s",
    і: "i",
    ј: "j",
    ԁ: "d",
    ԛ: "q",
    ԝ: "w",
    һ: "h",
    ү: "y",
    ӏ: "l",
    // Greek capitals
    Α: "A",
    Β: "B",
    Ε: "E",
    Ζ: "Z",
    Η: "H",
    Ι: "I",
    Κ: "K",
    Μ: "M",
    Ν: "N",
    Ο: "O",
    Ρ: "P",
    Τ: "T",
    Υ: "Y",
    Χ: "X",
    // Greek small letters
    α: "a",
    ι: "i",
    κ: "k",
    ν: "v",
    ο: "o",
    ρ: "p",
    υ: "u",
  }),
);

/** Decomposed first, so accented look-alikes (Ό, ё) map by their base letter; marks go later anyway. */
function toLookalikes(word: string): string {
  return word.normalize("NFD").replace(CYRILLIC_OR_GREEK, (c) => LOOKALIKES.get(c) ?? c);
}

const LETTERS = /[\p{L}\p{N}]/gu;

/** Maps the look-alikes of every word (or run of one-letter words) that mixes scripts. */
function lookalikesInMixedWords(s: string): string {
  const spans: [start: number, end: number][] = [];
  let spelled: [start: number, end: number] | undefined;
  let spelledLatin = false;
  let spelledOther = false;
  const endSpelled = () => {
    if (spelled && spelledLatin && spelledOther) spans.push(spelled);
    spelled = undefined;
    spelledLatin = spelledOther = false;
  };
  for (const match of s.matchAll(WORD_RUN)) {
    const word = match[0];
    const letters = word.match(LETTERS)?.length ?? 0;
    // Marks or invisibles alone: removed later, so they neither split nor join words here.
    if (letters === 0) continue;
    const start = match.index;
    const end = start + word.length;
    const latin = HAS_LATIN.test(word);
    const other = HAS_CYRILLIC_OR_GREEK.test(word);
    if (letters === 1) {
      spelled = spelled ? [spelled[0], end] : [start, end];
      spelledLatin ||= latin;
      spelledOther ||= other;
      continue;
    }
    endSpelled();
    if (latin && other) spans.push([start, end]);
  }
  endSpelled();
  if (spans.length === 0) return s;
  let out = "";
  let at = 0;
  for (const [start, end] of spans) {
    out += s.slice(at, start) + toLookalikes(s.slice(start, end));
    at = end;
  }
  return out + s.slice(at);
}

/**
 * Steps 1 to 5, with each run of invisible characters left as one INVISIBLE_MARK so the term
 * scanner (./term-matcher.ts) can treat it as a crossable word boundary. `allLookalikes` maps look-alikes in every
 * word, not only in mixed ones: used for terms, so a Cyrillic term also matches when its
 * letters are partly replaced by Latin look-alikes.
 */
export function normalizeMarked(text: string, allLookalikes = false): string {
  let s = text.normalize("NFKC");
  if (allLookalikes) s = toLookalikes(s);
  else if (HAS_CYRILLIC_OR_GREEK.test(s) && HAS_LATIN.test(s)) s = lookalikesInMixedWords(s);
  s = s.toLowerCase();
  if (s.includes("ß") || s.includes("ς")) s = s.replace(/[ßς]/g, (c) => (c === "ß" ? "ss" : "σ"));
  // NFKD splits letters from their marks; the final NFKC puts back together what removing the
  // marks and invisibles left apart (Hangul jamo, for one).
  return s
    .normalize("NFKD")
    .replace(STRIP_MARKS, "")
    .replace(INVISIBLE_RUN, INVISIBLE_MARK)
    .normalize("NFKC");
}

/** A text as the rules reviewer reads it. */
export interface NormalizedText {
  /** the normalised text: what configured patterns are matched against */
  readonly text: string;
  /** the same with invisible runs kept as marks, for the term scanner */
  readonly marked: string;
}

export function normalizeForReview(text: string): NormalizedText {
  const marked = normalizeMarked(text);
  // NFKC again: dropping the invisible marks may bring together what composes (a concatenation
  // of normalised strings is not always normalised).
  const plain = marked.includes(INVISIBLE_MARK)
    ? marked.replaceAll(INVISIBLE_MARK, "").normalize("NFKC")
    : marked;
  return { text: plain, marked };
}

/** The normalised text (steps 1 to 5): what patterns are matched against. */
export function normalizeText(text: string): string {
  return normalizeForReview(text).text;
}
