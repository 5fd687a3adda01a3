// The real OpenAI client against `forja-cli serve`:
//   node check_openai_client.mjs <base-url> <api-key> <model-id> <dataset.jsonl>
// (the demo dataset, whose first 20 questions the demo model answers differently).
// Greedy answers (temperature 0, a fixed seed) are checked against each other: streamed against not
// streamed, concurrent against sequential; the errors against OpenAI's codes. Exits non-zero on the first
// failed check, naming it.
import { readFileSync } from "node:fs";
import OpenAI from "openai";

const [baseURL, apiKey, model, dataset] = process.argv.slice(2);
if (!baseURL || !apiKey || !model || !dataset) {
  console.error("usage: node check_openai_client.mjs <base-url> <api-key> <model-id> <dataset.jsonl>");
  process.exit(2);
}
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 240_000 });
const greedy = { temperature: 0, seed: 7 };

function check(ok, what, detail) {
  if (!ok) {
    console.error(`FAIL: ${what}${detail === undefined ? "" : ": " + JSON.stringify(detail)}`);
    process.exit(1);
  }
  console.log(`ok: ${what}`);
}

async function expectError(what, call, status, code) {
  try {
    await call();
  } catch (e) {
    check(e instanceof OpenAI.APIError, `${what} is an APIError`, String(e));
    check(e.status === status, `${what}: HTTP ${status}`, e.status);
    check(e.code === code, `${what}: code ${code}`, e.code);
    check(typeof e.error?.message === "string" && e.error.message.length > 0, `${what}: a message`, e.error);
    return;
  }
  check(false, `${what} fails`);
}

const chat = (content, extra = {}) =>
  client.chat.completions.create({ model, messages: [{ role: "user", content }], max_tokens: 24, ...greedy, ...extra });

// models.list
const models = [];
for await (const m of client.models.list()) models.push(m.id);
check(models.length === 1 && models[0] === model, "models.list names the served model", models);

// Chat, not streamed and streamed: the same answer.
const plain = await chat("Hello! What can you do?");
const answer = plain.choices[0].message.content;
check(plain.object === "chat.completion" && typeof answer === "string" && answer.length > 0, "chat answers", plain);
check(["stop", "length"].includes(plain.choices[0].finish_reason), "chat finish_reason", plain.choices[0]);
const u = plain.usage;
check(u.prompt_tokens > 0 && u.completion_tokens > 0 && u.total_tokens === u.prompt_tokens + u.completion_tokens,
      "chat usage", u);

const stream = await chat("Hello! What can you do?", { stream: true, stream_options: { include_usage: true } });
let streamed = "", finish = null, streamUsage = null, chunks = 0;
for await (const chunk of stream) {
  chunks++;
  if (chunk.usage) streamUsage = chunk.usage;
  const c = chunk.choices[0];
  if (!c) continue;
  streamed += c.delta?.content ?? "";
  if (c.finish_reason) finish = c.finish_reason;
}
check(chunks > 2, "the stream comes in chunks", chunks);
check(streamed === answer, "streamed chat equals the plain answer", { streamed, answer });
check(finish === plain.choices[0].finish_reason, "streamed finish_reason", finish);
check(JSON.stringify(streamUsage) === JSON.stringify(u), "streamed usage", streamUsage);

// Completions, not streamed and streamed.
const completion = await client.completions.create({ model, prompt: "Once upon a time", max_tokens: 20, ...greedy });
const text = completion.choices[0].text;
check(completion.object === "text_completion" && text.length > 0, "completions answer", completion);
check(completion.usage.completion_tokens > 0, "completions usage", completion.usage);
let streamedText = "";
for await (const chunk of await client.completions.create({ model, prompt: "Once upon a time", max_tokens: 20,
                                                           stream: true, ...greedy }))
  streamedText += chunk.choices[0]?.text ?? "";
check(streamedText === text, "streamed completion equals the plain one", { streamedText, text });

// max_tokens and stop.
const short = await chat("Tell me a long story about a dragon.", { max_tokens: 3 });
check(short.choices[0].finish_reason === "length" && short.usage.completion_tokens === 3, "max_tokens: length",
      short.choices[0]);

// 20 concurrent requests: each gets the answer its prompt gets alone.
const prompts = readFileSync(dataset, "utf8").split("\n").filter((l) => l.trim()).slice(0, 20)
  .map((l) => JSON.parse(l).messages.find((m) => m.role === "user").content);
check(prompts.length === 20, "20 questions from the dataset", prompts.length);
const sequential = [];
for (const p of prompts) sequential.push((await chat(p)).choices[0].message.content);
const concurrent = await Promise.all(prompts.map((p) => chat(p).then((r) => r.choices[0].message.content)));
check(concurrent.every((a, i) => a === sequential[i]), "20 concurrent requests get their own answers",
      concurrent.map((a, i) => [a, sequential[i]]).filter(([a, b]) => a !== b));
check(new Set(sequential).size > 1, "the 20 prompts have different answers", sequential);

// Errors, in OpenAI's shape as the client reads them.
await expectError("an unknown model", () => client.chat.completions.create({ model: "gpt-4o", messages: [{
  role: "user", content: "hi" }] }), 404, "model_not_found");
await expectError("an oversized prompt", () => chat("dragon ".repeat(2000)), 400, "context_length_exceeded");
await expectError("a wrong API key", () => new OpenAI({ baseURL, apiKey: "wrong", maxRetries: 0 }).models.list(),
                  401, "invalid_api_key");
const malformed = await fetch(`${baseURL}/chat/completions`, {
  method: "POST", headers: { "Content-Type": "application/json", Authorization: `Bearer ${apiKey}` },
  body: "{\"model\": \"" + model + "\", \"messages\": [" });
const body = await malformed.json();
check(malformed.status === 400 && body.error?.type === "invalid_request_error" && "param" in body.error &&
      "code" in body.error, "malformed JSON: 400 in OpenAI's shape", body);
console.log("all checks passed");
