// compare.mjs measures token-counting throughput of npm tiktoken (wasm) and
// gpt-tokenizer (pure JS) on loom's corpus, and prints them beside loom's
// figures from `go test -bench BenchmarkCorpus` as a table of medians.
// Run it through compare.sh, which installs the packages into a scratch
// folder and runs the Go side first.
//
//   node compare.mjs <loom repo root> <go bench output> <repetitions>

import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { get_encoding } from "tiktoken";
import * as gptO200k from "gpt-tokenizer/encoding/o200k_base";
import * as gptCl100k from "gpt-tokenizer/encoding/cl100k_base";

const [root, goOut, repsArg] = process.argv.slice(2);
if (!root || !goOut) {
  console.error("usage: node compare.mjs <loom repo root> <go bench output> [repetitions]");
  process.exit(2);
}
const reps = Number(repsArg || 6);
const minMillis = 300; // per repetition
const encodings = ["cl100k_base", "o200k_base"];
const corpusDir = join(root, "tokens", "testdata", "corpus");
const files = readdirSync(corpusDir).filter((n) => !n.startsWith(".")).sort();

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

// mbps runs count(text) for at least minMillis, reps times, and returns
// the median throughput in MB/s (10^6 bytes, as Go's -bench reports).
function mbps(count, text, bytes) {
  count(text); // warm up
  const results = [];
  for (let r = 0; r < reps; r++) {
    let n = 0;
    const start = process.hrtime.bigint();
    let elapsed = 0;
    do {
      count(text);
      n++;
      elapsed = Number(process.hrtime.bigint() - start) / 1e6;
    } while (elapsed < minMillis);
    results.push((bytes * n) / (elapsed / 1000) / 1e6);
  }
  return median(results);
}

// Go: BenchmarkCorpus/<file>/<encoding>-N  iters  ns/op  MB/s ...
// BenchmarkCorpusNoMemo empties loom's long-piece memo before each count,
// the counterpart of gpt-tokenizer with its merge cache cleared.
const goMBps = {};
const goNoMemoMBps = {};
for (const line of readFileSync(goOut, "utf8").split("\n")) {
  const m = line.match(/^BenchmarkCorpus(NoMemo)?\/([^/]+)\/(\w+?)(?:-\d+)?\s+\d+\s+[\d.]+ ns\/op\s+([\d.]+) MB\/s/);
  if (m) ((m[1] ? goNoMemoMBps : goMBps)[`${m[2]}/${m[3]}`] ??= []).push(Number(m[4]));
}

const tk = Object.fromEntries(encodings.map((e) => [e, get_encoding(e)]));
const gpt = { cl100k_base: gptCl100k, o200k_base: gptO200k };
// Special-token look-alikes are plain text for loom and encode_ordinary;
// an empty disallowed set makes gpt-tokenizer count them as text too.
const gptOpts = { disallowedSpecial: new Set() };

const rows = [];
for (const name of files) {
  const buf = readFileSync(join(corpusDir, name));
  const text = buf.toString("utf8");
  for (const enc of encodings) {
    const tkCount = (t) => tk[enc].encode_ordinary(t).length;
    const gptCount = (t) => gpt[enc].countTokens(t, gptOpts);
    // Without its merge cache: every call merges from scratch, as loom's
    // uncached counter and tiktoken do.
    const gptFresh = (t) => {
      gpt[enc].clearMergeCache();
      return gpt[enc].countTokens(t, gptOpts);
    };
    const agree = tkCount(text) === gptCount(text);
    const goRuns = goMBps[`${name}/${enc}`] || [];
    const goNoMemoRuns = goNoMemoMBps[`${name}/${enc}`] || [];
    rows.push({
      file: name,
      enc,
      loom: goRuns.length ? median(goRuns) : NaN,
      loomFresh: goNoMemoRuns.length ? median(goNoMemoRuns) : NaN,
      tiktoken: mbps(tkCount, text, buf.length),
      gpt: mbps(gptCount, text, buf.length),
      gptFresh: mbps(gptFresh, text, buf.length),
      agree,
    });
  }
}

const f = (x) => (Number.isFinite(x) ? x.toFixed(2) : "-");
const header = ["file", "encoding", "loom MB/s", "loom, memo cleared", "tiktoken MB/s", "gpt-tokenizer MB/s", "gpt-tok, cache cleared", "loom/tiktoken", "loom cleared/tiktoken", "loom/gpt-tok", "loom cleared/gpt-tok cleared", "gpt-tok = tiktoken"];
const table = rows.map((r) => [r.file, r.enc, f(r.loom), f(r.loomFresh), f(r.tiktoken), f(r.gpt), f(r.gptFresh), f(r.loom / r.tiktoken) + "x", f(r.loomFresh / r.tiktoken) + "x", f(r.loom / r.gpt) + "x", f(r.loomFresh / r.gptFresh) + "x", r.agree ? "yes" : "NO"]);
const geo = (xs) => Math.exp(xs.reduce((a, x) => a + Math.log(x), 0) / xs.length);
const ok = rows.filter((r) => Number.isFinite(r.loom));
if (ok.length) {
  table.push(["geometric mean", "", f(geo(ok.map((r) => r.loom))), f(geo(ok.map((r) => r.loomFresh))), f(geo(ok.map((r) => r.tiktoken))), f(geo(ok.map((r) => r.gpt))), f(geo(ok.map((r) => r.gptFresh))),
    f(geo(ok.map((r) => r.loom / r.tiktoken))) + "x", f(geo(ok.map((r) => r.loomFresh / r.tiktoken))) + "x", f(geo(ok.map((r) => r.loom / r.gpt))) + "x", f(geo(ok.map((r) => r.loomFresh / r.gptFresh))) + "x", ""]);
}
console.log(`| ${header.join(" | ")} |`);
console.log(`|${header.map(() => "---").join("|")}|`);
for (const row of table) console.log(`| ${row.join(" | ")} |`);
console.log(`\nmedians of ${reps} repetitions (JS: >= ${minMillis} ms each; Go: go test -bench -count ${reps}); one thread each; gpt-tokenizer runs with its default merge cache, which stays warm across repetitions of the same text, as loom's long-piece memo does; the "cleared" columns empty both before every count.`);
for (const e of encodings) tk[e].free();
