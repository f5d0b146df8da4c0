// Fake model servers for the real agent CLIs, on one loopback port: Anthropic Messages (Claude
// Code), OpenAI Responses (Codex), Gemini streamGenerateContent (Gemini CLI). Each first answers
// with one tool call that creates DONE in the task folder named in the prompt ("Task folder: …"),
// then, once the tool result comes back, with a short text. Prints the port on stdout.
import http from "node:http";

const log = (...a) => process.env.FAKE_MODELS_LOG && console.error("[fake-models]", ...a);

function taskFolder(raw) {
  const m = raw.match(/Task folder: (\/[^\s"\\]+)/);
  return m ? m[1] : null;
}

function sse(res, events) {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  for (const [event, data] of events) {
    if (event) res.write(`event: ${event}\n`);
    res.write(`data: ${JSON.stringify(data)}\n\n`);
  }
  res.end();
}

function anthropic(body, raw, res) {
  const msgs = body.messages || [];
  const last = msgs[msgs.length - 1];
  const hasResult = JSON.stringify(last?.content ?? "").includes("tool_result");
  const canWrite = (body.tools || []).some((t) => t.name === "Write");
  const folder = taskFolder(raw);
  const usage = { input_tokens: 120, output_tokens: 1 };
  const start = ["message_start", { type: "message_start", message: { id: "msg_fake", type: "message", role: "assistant", model: body.model, content: [], stop_reason: null, stop_sequence: null, usage } }];
  let block, delta, stop;
  if (canWrite && folder && !hasResult) {
    block = { type: "tool_use", id: "toolu_fake1", name: "Write", input: {} };
    delta = { type: "input_json_delta", partial_json: JSON.stringify({ file_path: `${folder}/DONE`, content: "done\n" }) };
    stop = "tool_use";
  } else {
    block = { type: "text", text: "" };
    delta = { type: "text_delta", text: "Done." };
    stop = "end_turn";
  }
  if (!body.stream) {
    const content = stop === "tool_use" ? [{ ...block, input: JSON.parse(delta.partial_json) }] : [{ type: "text", text: "Done." }];
    res.writeHead(200, { "content-type": "application/json" });
    return res.end(JSON.stringify({ id: "msg_fake", type: "message", role: "assistant", model: body.model, content, stop_reason: stop, usage: { input_tokens: 120, output_tokens: 8 } }));
  }
  sse(res, [
    start,
    ["content_block_start", { type: "content_block_start", index: 0, content_block: block }],
    ["content_block_delta", { type: "content_block_delta", index: 0, delta }],
    ["content_block_stop", { type: "content_block_stop", index: 0 }],
    ["message_delta", { type: "message_delta", delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 8 } }],
    ["message_stop", { type: "message_stop" }],
  ]);
}

function openaiResponses(body, raw, res) {
  const input = JSON.stringify(body.input ?? "");
  const hasOutput = input.includes("function_call_output");
  const folder = taskFolder(raw);
  const tools = (body.tools || []).map((t) => t.name);
  let item;
  if (folder && !hasOutput) {
    const cmd = `touch '${folder}/DONE'`;
    const args = tools.includes("exec_command") || !tools.includes("shell") ? { cmd } : { command: ["sh", "-c", cmd] };
    const name = tools.includes("exec_command") || !tools.includes("shell") ? "exec_command" : "shell";
    item = { type: "function_call", id: "fc_fake1", call_id: "call_fake1", name, arguments: JSON.stringify(args), status: "completed" };
  } else {
    item = { type: "message", id: "msg_fake1", role: "assistant", status: "completed", content: [{ type: "output_text", text: "Done.", annotations: [] }] };
  }
  const response = { id: "resp_fake", object: "response", status: "completed", model: body.model, output: [item] };
  sse(res, [
    ["response.created", { type: "response.created", response: { ...response, status: "in_progress", output: [] } }],
    ["response.output_item.added", { type: "response.output_item.added", output_index: 0, item }],
    ["response.output_item.done", { type: "response.output_item.done", output_index: 0, item }],
    ["response.completed", { type: "response.completed", response: { ...response, usage: { input_tokens: 200, input_tokens_details: { cached_tokens: 0 }, output_tokens: 9, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 209 } } }],
  ]);
}

function gemini(url, body, raw, res) {
  const usageMetadata = { promptTokenCount: 150, candidatesTokenCount: 7, totalTokenCount: 157 };
  if (url.includes(":countTokens")) {
    res.writeHead(200, { "content-type": "application/json" });
    return res.end(JSON.stringify({ totalTokens: 150 }));
  }
  if (url.includes(":generateContent")) {
    // Side calls (next-speaker checks and the like) want JSON text.
    res.writeHead(200, { "content-type": "application/json" });
    return res.end(JSON.stringify({ candidates: [{ content: { role: "model", parts: [{ text: '{"next_speaker":"user","reasoning":"done"}' }] }, finishReason: "STOP" }], usageMetadata }));
  }
  const contents = JSON.stringify(body.contents ?? "");
  const folder = taskFolder(raw);
  const hasResponse = contents.includes("functionResponse");
  const part = folder && !hasResponse
    ? { functionCall: { name: "write_file", args: { file_path: `${folder}/DONE`, content: "done\n" } } }
    : { text: "Done." };
  sse(res, [[null, { candidates: [{ content: { role: "model", parts: [part] }, finishReason: "STOP", index: 0 }], usageMetadata }]]);
}

const server = http.createServer((req, res) => {
  let raw = "";
  req.on("data", (c) => (raw += c));
  req.on("end", () => {
    log(req.method, req.url);
    let body = {};
    try { body = raw ? JSON.parse(raw) : {}; } catch { /* not JSON */ }
    const path = req.url.split("?")[0];
    if (req.method === "HEAD" || req.method === "GET") {
      res.writeHead(200, { "content-type": "application/json" });
      return res.end(req.method === "HEAD" ? undefined : "{}");
    }
    if (path.endsWith("/v1/messages")) return anthropic(body, raw, res);
    if (path.endsWith("/v1/responses")) return openaiResponses(body, raw, res);
    if (path.startsWith("/v1beta/models/")) return gemini(req.url, body, raw, res);
    res.writeHead(404, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { message: `fake-models: no route for ${req.method} ${req.url}` } }));
  });
});
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
