// Fake model servers for the real agent CLIs, on one loopback port: Anthropic Messages (Claude
// Code), OpenAI Responses (Codex), Gemini streamGenerateContent (Gemini CLI). Prints the port on
// stdout.
//
// What a conversation gets depends on a word in its objective (every request of it carries it):
// - plain: one tool call that creates DONE in the task folder named in the prompt ("Task folder:
//   …"), then, once the tool result comes back, a short text;
// - "scenario:resume": while the request does not carry the first session's answer, only that
//   answer (text with RESUME_MARKER, no tool call), so the process ends without DONE; a request
//   that carries it as the assistant's earlier turn (a resumed session) gets the plain answers;
// - "scenario:limit": the model requests of its task folder get the provider's own 429 until a
//   reset LIMIT_SECONDS (default 3) after the first of them, then the plain answers. Codex gets
//   a plan's usage limit (`usage_limit_reached`); "scenario:limit-rate" gives it the API's rate
//   limit instead (`rate_limit_exceeded`, "try again in 3s").
//
// Every answer reports usage, and the server books it per task folder in its ledger, normalised
// as the platform counts spend: `input` all input tokens (cache reads and writes included),
// `cached` the cache reads among them, `output` all output tokens (reasoning/thinking included).
// GET /ledger serves the ledger (with, for a limit scenario, the 429s and the reset), GET /log
// one line per request (what it carried, what it got).
import http from "node:http";

const verbose = (...a) => process.env.FAKE_MODELS_LOG && console.error("[fake-models]", ...a);
const RESUME_MARKER = "resume-marker-5c1e";
const LIMIT_SECONDS = Number(process.env.LIMIT_SECONDS || 3);

const ledger = {};
const requests = [];

function taskFolder(raw) {
  const m = raw.match(/Task folder: (\/[^\s"\\]+)/);
  return m ? m[1] : null;
}

function scenario(raw) {
  const m = raw.match(/scenario:(resume|limit-rate|limit)/);
  return m ? m[1] : "plain";
}

function account(folder, provider) {
  return (ledger[folder || "(no task folder)"] ||= { provider, requests: 0, refused: 0, input: 0, cached: 0, output: 0, wire: {} });
}

function bill(folder, provider, t) {
  const l = account(folder, provider);
  l.requests += 1;
  l.input += t.input;
  l.cached += t.cached;
  l.output += t.output;
  for (const [k, v] of Object.entries(t.wire)) l.wire[k] = (l.wire[k] || 0) + v;
}

// A limit scenario's requests before its reset are refused (and counted, billed nothing): the
// seconds left, else 0.
function limitedFor(folder, provider, raw) {
  if (!scenario(raw).startsWith("limit") || !folder) return 0;
  const now = Date.now() / 1000;
  const l = account(folder, provider);
  l.reset_at ||= Math.ceil(now + LIMIT_SECONDS);
  if (l.reset_at <= now) return 0;
  l.refused += 1;
  return l.reset_at - now;
}

function sse(res, events) {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  for (const [event, data] of events) {
    if (event) res.write(`event: ${event}\n`);
    res.write(`data: ${JSON.stringify(data)}\n\n`);
  }
  res.end();
}

function json(res, status, body, headers = {}) {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

// What the answer is: "call" (the tool call creating DONE), "text" (the closing text after the
// tool result) or "first" (a resume scenario's first session: text only).
function decide(raw, hasToolResult, carried) {
  if (scenario(raw) === "resume" && !carried) return "first";
  return hasToolResult ? "text" : "call";
}

const FIRST_TEXT = `Noted the task; I will create DONE in my next session (${RESUME_MARKER}).`;

function anthropic(body, raw, res, entry) {
  const msgs = body.messages || [];
  const last = msgs[msgs.length - 1];
  const hasResult = JSON.stringify(last?.content ?? "").includes("tool_result");
  const canWrite = (body.tools || []).some((t) => t.name === "Write");
  const folder = taskFolder(raw);
  entry.carried = msgs.some((m) => m.role === "assistant" && JSON.stringify(m.content).includes(RESUME_MARKER));
  entry.messages = msgs.length;
  const wait = limitedFor(folder, "anthropic", raw);
  if (wait) {
    entry.status = 429;
    // The API's own 429: a rate_limit_error, with retry-after and the unified limit's headers.
    return json(res, 429,
      { type: "error", error: { type: "rate_limit_error", message: "This request would exceed your account's rate limit. Please try again later." }, request_id: "req_fake_limit" },
      { "retry-after": String(Math.ceil(wait)), "request-id": "req_fake_limit", "anthropic-ratelimit-unified-status": "rejected", "anthropic-ratelimit-unified-reset": String(ledger[folder].reset_at), "anthropic-ratelimit-unified-representative-claim": "five_hour" });
  }
  const what = canWrite && folder ? decide(raw, hasResult, entry.carried) : "text";
  entry.answer = what;
  // Fresh input grows with the conversation; some of it read from and written to the cache.
  const wire = { input_tokens: 100 + 10 * msgs.length, cache_creation_input_tokens: 40, cache_read_input_tokens: 300, output_tokens: 8 };
  bill(folder, "anthropic", { input: wire.input_tokens + wire.cache_creation_input_tokens + wire.cache_read_input_tokens, cached: wire.cache_read_input_tokens, output: wire.output_tokens, wire });
  let block, delta, stop;
  if (what === "call") {
    block = { type: "tool_use", id: `toolu_fake${requests.length}`, name: "Write", input: {} };
    delta = { type: "input_json_delta", partial_json: JSON.stringify({ file_path: `${folder}/DONE`, content: "done\n" }) };
    stop = "tool_use";
  } else {
    block = { type: "text", text: "" };
    delta = { type: "text_delta", text: what === "first" ? FIRST_TEXT : "Done." };
    stop = "end_turn";
  }
  if (!body.stream) {
    const content = stop === "tool_use" ? [{ ...block, input: JSON.parse(delta.partial_json) }] : [{ type: "text", text: delta.text }];
    return json(res, 200, { id: "msg_fake", type: "message", role: "assistant", model: body.model, content, stop_reason: stop, usage: wire });
  }
  const startUsage = { ...wire, output_tokens: 1 };
  sse(res, [
    ["message_start", { type: "message_start", message: { id: "msg_fake", type: "message", role: "assistant", model: body.model, content: [], stop_reason: null, stop_sequence: null, usage: startUsage } }],
    ["content_block_start", { type: "content_block_start", index: 0, content_block: block }],
    ["content_block_delta", { type: "content_block_delta", index: 0, delta }],
    ["content_block_stop", { type: "content_block_stop", index: 0 }],
    ["message_delta", { type: "message_delta", delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: wire.output_tokens } }],
    ["message_stop", { type: "message_stop" }],
  ]);
}

function openaiResponses(body, raw, res, entry) {
  const input = Array.isArray(body.input) ? body.input : [];
  const hasOutput = JSON.stringify(body.input ?? "").includes("function_call_output");
  const folder = taskFolder(raw);
  entry.carried = input.some((i) => i.role === "assistant" && JSON.stringify(i.content ?? "").includes(RESUME_MARKER));
  entry.messages = input.length;
  const wait = limitedFor(folder, "openai", raw);
  if (wait) {
    entry.status = 429;
    const secs = Math.ceil(wait);
    // The Responses API's own 429s: a plan's usage limit (ChatGPT sign-in), or the API's rate
    // limit (API key) with its "try again in".
    const rate = scenario(raw) === "limit-rate";
    const error = rate
      ? { message: `Rate limit reached for gpt-5 in organization org-fake on tokens per min (TPM): Limit 30000, Used 30000, Requested 200. Please try again in ${secs}s.`, type: "tokens", param: null, code: "rate_limit_exceeded" }
      : { type: "usage_limit_reached", message: "The usage limit has been reached", plan_type: "plus", resets_at: ledger[folder].reset_at, resets_in_seconds: secs };
    return json(res, 429, { error }, rate ? { "x-ratelimit-reset-tokens": `${secs}s` } : {});
  }
  const tools = (body.tools || []).map((t) => t.name);
  const what = folder ? decide(raw, hasOutput, entry.carried) : "text";
  entry.answer = what;
  let item;
  if (what === "call") {
    const cmd = `touch '${folder}/DONE'`;
    const args = tools.includes("exec_command") || !tools.includes("shell") ? { cmd } : { command: ["sh", "-c", cmd] };
    const name = tools.includes("exec_command") || !tools.includes("shell") ? "exec_command" : "shell";
    item = { type: "function_call", id: `fc_fake${requests.length}`, call_id: `call_fake${requests.length}`, name, arguments: JSON.stringify(args), status: "completed" };
  } else {
    const text = what === "first" ? FIRST_TEXT : "Done.";
    item = { type: "message", id: `msg_fake${requests.length}`, role: "assistant", status: "completed", content: [{ type: "output_text", text, annotations: [] }] };
  }
  // `input_tokens` includes the cached ones, `output_tokens` the reasoning ones.
  const usage = { input_tokens: 200 + 10 * input.length, input_tokens_details: { cached_tokens: 64 }, output_tokens: 9, output_tokens_details: { reasoning_tokens: 3 } };
  usage.total_tokens = usage.input_tokens + usage.output_tokens;
  bill(folder, "openai", { input: usage.input_tokens, cached: 64, output: usage.output_tokens, wire: { input_tokens: usage.input_tokens, cached_tokens: 64, output_tokens: 9, reasoning_tokens: 3 } });
  const response = { id: `resp_fake${requests.length}`, object: "response", status: "completed", model: body.model, output: [item] };
  sse(res, [
    ["response.created", { type: "response.created", response: { ...response, status: "in_progress", output: [] } }],
    ["response.output_item.added", { type: "response.output_item.added", output_index: 0, item }],
    ["response.output_item.done", { type: "response.output_item.done", output_index: 0, item }],
    ["response.completed", { type: "response.completed", response: { ...response, usage } }],
  ]);
}

function gemini(url, body, raw, res, entry) {
  const contents = Array.isArray(body.contents) ? body.contents : [];
  const folder = taskFolder(raw);
  entry.carried = contents.some((c) => c.role === "model" && JSON.stringify(c.parts ?? "").includes(RESUME_MARKER));
  entry.messages = contents.length;
  // `promptTokenCount` includes the cached tokens; thoughts are billed as output.
  const usageMetadata = { promptTokenCount: 150 + 10 * contents.length, cachedContentTokenCount: 50, candidatesTokenCount: 7, thoughtsTokenCount: 5 };
  usageMetadata.totalTokenCount = usageMetadata.promptTokenCount + usageMetadata.candidatesTokenCount + usageMetadata.thoughtsTokenCount;
  const billIt = () => bill(folder, "gemini", { input: usageMetadata.promptTokenCount, cached: 50, output: 12, wire: { promptTokenCount: usageMetadata.promptTokenCount, cachedContentTokenCount: 50, candidatesTokenCount: 7, thoughtsTokenCount: 5 } });
  if (url.includes(":countTokens")) {
    return json(res, 200, { totalTokens: usageMetadata.promptTokenCount });
  }
  const wait = limitedFor(folder, "gemini", raw);
  if (wait) {
    entry.status = 429;
    // The API's own RESOURCE_EXHAUSTED: a per-minute quota, with the delay to retry after.
    return json(res, 429, { error: { code: 429, message: `You exceeded your current quota, please check your plan and billing details. Please retry in ${wait.toFixed(3)}s.`, status: "RESOURCE_EXHAUSTED", details: [
      { "@type": "type.googleapis.com/google.rpc.QuotaFailure", violations: [{ quotaMetric: "generativelanguage.googleapis.com/generate_content_paid_tier_input_token_count", quotaId: "GenerateContentPaidTierInputTokensPerModelPerMinute", quotaDimensions: { location: "global", model: "gemini-2.5-pro" }, quotaValue: "2000000" }] },
      { "@type": "type.googleapis.com/google.rpc.Help", links: [{ description: "Learn more about Gemini API quotas", url: "https://ai.google.dev/gemini-api/docs/rate-limits" }] },
      { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: `${Math.ceil(wait)}s` },
    ] } });
  }
  if (url.includes(":generateContent")) {
    // Side calls (next-speaker checks and the like) want JSON text.
    entry.answer = "side";
    billIt();
    return json(res, 200, { candidates: [{ content: { role: "model", parts: [{ text: '{"next_speaker":"user","reasoning":"done"}' }] }, finishReason: "STOP" }], usageMetadata });
  }
  const hasResponse = JSON.stringify(contents).includes("functionResponse");
  const what = folder ? decide(raw, hasResponse, entry.carried) : "text";
  entry.answer = what;
  billIt();
  const part = what === "call"
    ? { functionCall: { name: "write_file", args: { file_path: `${folder}/DONE`, content: "done\n" } } }
    : { text: what === "first" ? FIRST_TEXT : "Done." };
  sse(res, [[null, { candidates: [{ content: { role: "model", parts: [part] }, finishReason: "STOP", index: 0 }], usageMetadata }]]);
}

const server = http.createServer((req, res) => {
  let raw = "";
  req.on("data", (c) => (raw += c));
  req.on("end", () => {
    verbose(req.method, req.url);
    let body = {};
    try { body = raw ? JSON.parse(raw) : {}; } catch { /* not JSON */ }
    const path = req.url.split("?")[0];
    if (req.method === "GET" && path === "/ledger") return json(res, 200, ledger);
    if (req.method === "GET" && path === "/log") return json(res, 200, requests);
    if (req.method === "HEAD" || req.method === "GET") {
      res.writeHead(200, { "content-type": "application/json" });
      return res.end(req.method === "HEAD" ? undefined : "{}");
    }
    const entry = { at: new Date().toISOString(), method: req.method, path, folder: taskFolder(raw), scenario: scenario(raw), status: 200 };
    requests.push(entry);
    if (path.endsWith("/v1/messages")) return anthropic(body, raw, res, entry);
    if (path.endsWith("/v1/responses")) return openaiResponses(body, raw, res, entry);
    if (path.startsWith("/v1beta/models/")) return gemini(req.url, body, raw, res, entry);
    entry.status = 404;
    json(res, 404, { error: { message: `fake-models: no route for ${req.method} ${req.url}` } });
  });
});
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
