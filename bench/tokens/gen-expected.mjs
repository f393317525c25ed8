// gen-expected.mjs writes tokens/testdata/expected.json: the token counts the
// reference implementation, npm tiktoken (OpenAI's Rust core built to wasm),
// gives for every corpus file and a few generated texts, in cl100k_base and
// o200k_base. Counts use encode_ordinary, so special-token look-alikes such
// as "<|endoftext|>" count as plain text, as they do in loom.
//
// Run it through gen-expected.sh, which installs tiktoken into a scratch
// folder first:  bench/tokens/gen-expected.sh
// or by hand:     node gen-expected.mjs <loom repo root>   (from a folder
//                 where `npm install` of this package.json has run)

import { readFileSync, readdirSync, writeFileSync, renameSync } from "node:fs";
import { join } from "node:path";
import { get_encoding } from "tiktoken";

const root = process.argv[2];
if (!root) {
  console.error("usage: node gen-expected.mjs <loom repo root>");
  process.exit(2);
}
const corpusDir = join(root, "tokens", "testdata", "corpus");
const outPath = join(root, "tokens", "testdata", "expected.json");
const version = JSON.parse(
  readFileSync(new URL("./node_modules/tiktoken/package.json", import.meta.url), "utf8"),
).version;

const encodingNames = ["cl100k_base", "o200k_base"];
const encoders = encodingNames.map((name) => [name, get_encoding(name)]);
const counts = (text) =>
  Object.fromEntries(encoders.map(([name, enc]) => [name, enc.encode_ordinary(text).length]));

// Short texts that pin down edge cases: empty input, whitespace, special
// token look-alikes, a byte-order mark, contractions, non-Latin scripts.
const strings = [
  "",
  " ",
  "\n",
  "hello world",
  "Hello, World!",
  "<|endoftext|>",
  "<|endofprompt|>",
  "before<|endoftext|>after",
  "<|im_start|>user\nhi<|im_end|>",
  "<|fim_prefix|><|fim_middle|><|fim_suffix|>",
  "\uFFFD",
  "\uFFFD\uFFFD\uFFFD",
  "\uFEFFstarts with a byte-order mark",
  "don't won't they're I'VE",
  "1234567890",
  "   leading spaces",
  "trailing spaces   ",
  "\r\n\r\n",
  "naïve café",
  "日本語のテキスト",
  "👨‍👩‍👧‍👦",
];

// Long generated texts, stored as a unit and a repeat count so that
// expected.json stays small. The first two are the worst cases for a
// byte-pair encoder: one piece of 100 KB that it must merge.
const repeats = [
  ["a", 102400],
  [" ", 102400],
  ["\n", 10000],
  ["ab", 20000],
  [".", 50000],
  ["1", 10000],
  ["日", 30000],
  ["😀", 10000],
  ["Lorem ipsum ", 5000],
];

const files = readdirSync(corpusDir)
  .filter((name) => !name.startsWith("."))
  .sort()
  .map((name) => {
    const buf = readFileSync(join(corpusDir, name));
    // fatal: the corpus must be valid UTF-8, or Go and JavaScript would
    // repair it differently and the comparison would mean nothing.
    const text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(buf);
    return { name, bytes: buf.length, counts: counts(text) };
  });

const result = {
  generator: `bench/tokens/gen-expected.mjs, npm tiktoken ${version}, encode_ordinary`,
  files,
  strings: strings.map((text) => ({ text, counts: counts(text) })),
  repeats: repeats.map(([unit, times]) => ({ unit, times, counts: counts(unit.repeat(times)) })),
};
for (const [, enc] of encoders) enc.free();

const tmp = outPath + ".tmp";
writeFileSync(tmp, JSON.stringify(result, null, 2) + "\n");
renameSync(tmp, outPath);
console.log(`wrote ${outPath}: ${files.length} files, ${strings.length} strings, ${repeats.length} repeats`);
