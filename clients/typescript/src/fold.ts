/**
 * The account fold of the FailOpen allowance, as the Go client's
 * `api/client/fold.go`: tollgate's own normalisation (authguard's
 * NormalizeAccount), so that every spelling tollgate counts as one account
 * shares one allowance. NFD and NFC are JavaScript's; the rest of the
 * Unicode data is tollgate's own, in the generated foldtable.ts.
 *
 * @packageDocumentation
 */

import { foldMulti, foldRuns, markRanges, widthRuns } from "./foldtable.js";

/** Go's unicode.IsSpace: the white space strings.Fields splits on. */
const goSpace = /[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/u;

/** The tables, unpacked on first use: a code point's width fold, its case fold, its class (230, 1, or none for 0). */
interface Tables {
  width: Map<number, string>;
  fold: Map<number, string>;
  mark: Map<number, number>;
}

let tables: Tables | undefined;

function unpack(): Tables {
  const runs = (packed: readonly number[], into: Map<number, string>): void => {
    for (let i = 0; i + 3 < packed.length; i += 4) {
      const [first, count, stride, delta] = packed.slice(i, i + 4) as [number, number, number, number];
      for (let k = 0; k < count; k++) into.set(first + k * stride, String.fromCodePoint(first + k * stride + delta));
    }
  };
  const t: Tables = { width: new Map(), fold: new Map(foldMulti), mark: new Map() };
  runs(widthRuns, t.width);
  runs(foldRuns, t.fold);
  for (let i = 0; i + 2 < markRanges.length; i += 3) {
    const [first, last, cls] = markRanges.slice(i, i + 3) as [number, number, number];
    for (let c = first; c <= last; c++) t.mark.set(c, cls);
  }
  return t;
}

/** s with each code point replaced by its entry in table, if it has one. */
function mapEach(s: string, table: Map<number, string>): string {
  let out = "";
  for (const ch of s) out += table.get(ch.codePointAt(0) as number) ?? ch;
  return out;
}

/**
 * An account folded as tollgate folds it: white space collapsed, and each
 * word width folded ("ａｌｉｃｅ" is "alice"), without zero-width joiners
 * and non-joiners, case folded in full ("Straße" is "strasse", "İ" is "i"),
 * without a dot above on i or j, lower-cased and in NFC. An account
 * tollgate would refuse is folded all the same: it gets a key of its own.
 * The vectors of clients/testdata/account_fold.json, written from tollgate's
 * own NormalizeAccount, hold it to tollgate.
 */
export function foldAccount(s: string): string {
  if (/^[\t\n\v\f\r\x20-\x7e]*$/.test(s)) return s.split(goSpace).filter((w) => w !== "").join(" ").toLowerCase();
  tables ??= unpack();
  const t = tables;
  const words: string[] = [];
  for (const word of s.split(goSpace)) {
    // authguard's enforceUserpart without its refusals, in its order, but
    // for lower case, which the table takes with case folding (the
    // generator checks that nothing between tells them apart).
    let w = mapEach(word, t.width).replace(/[\u200c\u200d]/g, "").normalize("NFD");
    w = mapEach(dropDotAbove(mapEach(w, t.fold), t.mark), t.width).normalize("NFC");
    if (w !== "") words.push(w);
  }
  return words.join(" ");
}

/**
 * w, decomposed and case folded, without each U+0307 COMBINING DOT ABOVE on
 * i or j that comes before any other mark above: it takes the place of the
 * letter's own dot, so "i\u0307" (what İ case folds to) is "i".
 */
function dropDotAbove(w: string, mark: Map<number, number>): string {
  if (!w.includes("\u0307")) return w;
  let out = "";
  let base = ""; // the last character of combining class 0
  let markAbove = false; // a mark above has followed base
  for (const ch of w) {
    const cls = mark.get(ch.codePointAt(0) as number);
    if (ch === "\u0307" && (base === "i" || base === "j") && !markAbove) continue;
    if (cls === undefined) {
      base = ch;
      markAbove = false;
    } else if (cls === 230) {
      markAbove = true;
    }
    out += ch;
  }
  return out;
}
