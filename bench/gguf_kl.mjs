// How far each quantized GGUF file's next-token distributions are from the reference file's, as llama.cpp
// computes them (node-llama-cpp's prebuilt CPU library) over one fixed text: the mean and largest
// KL(reference || quantized) per position, and how often both pick the same top token.
//   node gguf_kl.mjs REFERENCE.gguf TEXT_FILE QUANTIZED.gguf...      (prints one JSON object)
import {readFileSync} from "node:fs";
import {cpus} from "node:os";
import {getLlama} from "node-llama-cpp";

const [reference, textFile, ...files] = process.argv.slice(2);
const llama = await getLlama({gpu: false, build: "never"});
const maxTokens = 128;

// log-softmax of each position's logits, as Float64Arrays.
async function logProbs(file, ids) {
  const model = await llama.loadModel({modelPath: file});
  const context = await model.createContext({contextSize: 256, threads: cpus().length});
  const sequence = context.getSequence();
  const results = await sequence.controlledEvaluate(ids.map((id) => [id, {generateNext: {logits: true}}]));
  const rows = results.map((r) => {
    const row = new Float64Array(r.next.logits.size);
    for (const [token, value] of r.next.logits) row[token] = value;
    let max = -Infinity;
    for (const v of row) max = Math.max(max, v);
    let sum = 0;
    for (const v of row) sum += Math.exp(v - max);
    const log = max + Math.log(sum);
    return row.map((v) => v - log);
  });
  await context.dispose();
  await model.dispose();
  return rows;
}

const refModel = await llama.loadModel({modelPath: reference});
const ids = Array.from(refModel.tokenize(readFileSync(textFile, "utf8"))).slice(0, maxTokens);
await refModel.dispose();
const ref = await logProbs(reference, ids);
const argmax = (row) => row.reduce((best, v, i) => (v > row[best] ? i : best), 0);
const out = {reference, tokens: ids.length, files: {}};
for (const file of files) {
  const q = await logProbs(file, ids);
  let sum = 0, max = 0, same = 0;
  for (let p = 0; p < ids.length; ++p) {
    let kl = 0;
    for (let t = 0; t < ref[p].length; ++t) kl += Math.exp(ref[p][t]) * (ref[p][t] - q[p][t]);
    sum += kl;
    max = Math.max(max, kl);
    if (argmax(ref[p]) === argmax(q[p])) ++same;
  }
  out.files[file] = {mean_kl: sum / ids.length, max_kl: max, same_top1: same / ids.length};
}
console.log(JSON.stringify(out, null, 1));
