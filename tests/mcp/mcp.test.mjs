// longrun's MCP server (POST /mcp) driven by the official MCP TypeScript SDK client against a
// real `longrun serve` on a free loopback port, with its scripted demo model.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UriTemplate } from '@modelcontextprotocol/sdk/shared/uriTemplate.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bin = process.env.LONGRUN_BIN ?? join(root, 'target', 'debug', 'longrun');
const ALICE = 'lr_mcp_alice_token';
const BOB = 'lr_mcp_bob_token';
let server;
let base;
let dataDir;

before(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'longrun-mcp-'));
  server = spawn(bin, ['serve', '--port', '0', '--data-dir', dataDir], {
    env: { ...process.env, LONGRUN_TOKENS: `${ALICE}:alice,${BOB}:bob` },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  base = await new Promise((resolve, reject) => {
    server.once('exit', (code) => reject(new Error(`longrun serve exited with ${code}`)));
    createInterface({ input: server.stdout }).on('line', (line) => {
      const m = line.match(/listening on (http:\/\/\S+)/);
      if (m) resolve(m[1]);
    });
  });
});

after(() => {
  server?.kill('SIGTERM');
  rmSync(dataDir, { recursive: true, force: true });
});

async function connect(token) {
  const client = new Client({ name: 'longrun-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return client;
}

const ENDED = ['completed', 'failed', 'stopped', 'canceled', 'waiting_on_user'];

test('an MCP client starts a run, polls it to its end and reads its report and a doc', async () => {
  // Arrange
  const client = await connect(ALICE);
  assert.equal(client.getServerVersion().name, 'longrun');

  // Act
  const { tools } = await client.listTools();
  const started = await client.callTool({
    name: 'start_run',
    arguments: { objective: 'Write a short tea guide', budgets: { max_iterations: 8 } },
  });
  const runId = started.structuredContent.id;
  let run;
  for (let i = 0; i < 300; i++) {
    run = (await client.callTool({ name: 'get_run', arguments: { run_id: runId } })).structuredContent;
    if (ENDED.includes(run.status)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const report = await client.callTool({ name: 'get_report', arguments: { run_id: runId } });
  const listed = await client.callTool({ name: 'list_runs', arguments: {} });
  const path = report.structuredContent.artifacts.documents[0].path;
  const doc = await client.callTool({ name: 'read_doc', arguments: { run_id: runId, path } });
  const resource = await client.readResource({ uri: `longrun://runs/${runId}/report` });
  const { resources } = await client.listResources();

  // Assert
  assert.deepEqual(
    tools.map((t) => t.name).sort(),
    ['cancel', 'follow_up', 'get_report', 'get_run', 'list_runs', 'post_message', 'read_doc', 'respond', 'start_run'],
  );
  assert.ok(tools.every((t) => t.inputSchema.type === 'object'));
  assert.equal(started.isError, false);
  assert.match(runId, /^run_/);
  assert.equal(run.status, 'completed');
  assert.equal(report.isError, false);
  assert.equal(report.structuredContent.status, 'completed');
  const { created, updated } = report.structuredContent.what_changed;
  assert.deepEqual([...created, ...updated].filter((c) => c.type === 'document').map((c) => c.id).sort(),
    report.structuredContent.artifacts.documents.map((a) => a.path).sort(), 'every document is a change of the run');
  assert.ok(listed.structuredContent.runs.some((r) => r.id === runId));
  assert.equal(doc.isError, false);
  assert.ok(doc.structuredContent.content.length > 0);
  assert.equal(JSON.parse(resource.contents[0].text).summary, report.structuredContent.summary);
  assert.ok(resources.some((r) => r.uri === `longrun://runs/${runId}/report`));
  await client.close();
});

test('a nested document is read through the docs template as the SDK expands it', async () => {
  // Arrange: a completed demo run, which wrote notes/green.md.
  const client = await connect(ALICE);
  const started = await client.callTool({ name: 'start_run', arguments: { objective: 'Tea notes' } });
  const runId = started.structuredContent.id;
  for (let i = 0; i < 300; i++) {
    const run = (await client.callTool({ name: 'get_run', arguments: { run_id: runId } })).structuredContent;
    if (ENDED.includes(run.status)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const { resourceTemplates } = await client.listResourceTemplates();
  const docs = resourceTemplates.find((t) => t.name === 'workspace document');

  // Act: the SDK's own RFC 6570 expansion, and the percent-encoded form a simple `{path}`
  // expansion gives.
  const uri = new UriTemplate(docs.uriTemplate).expand({ run_id: runId, path: 'notes/green.md' });
  const expanded = await client.readResource({ uri });
  const encoded = await client.readResource({ uri: `longrun://runs/${runId}/docs/notes%2Fgreen.md` });
  const missing = client.readResource({ uri: `longrun://runs/${runId}/docs/notes/none.md` });

  // Assert
  assert.equal(uri, `longrun://runs/${runId}/docs/notes/green.md`);
  assert.match(expanded.contents[0].text, /Green tea/);
  assert.equal(encoded.contents[0].text, expanded.contents[0].text);
  await assert.rejects(missing, /notes\/none\.md/);
  await client.close();
});

test('list_runs pages with a cursor through every run once', async () => {
  // Arrange: alice has the runs of the tests above, and one more.
  const client = await connect(ALICE);
  await client.callTool({ name: 'start_run', arguments: { objective: 'One more' } });
  const all = (await client.callTool({ name: 'list_runs', arguments: { limit: 200 } })).structuredContent;

  // Act
  const seen = [];
  let cursor;
  for (let page = 0; page < 50; page++) {
    const args = cursor ? { limit: 1, cursor } : { limit: 1 };
    const res = (await client.callTool({ name: 'list_runs', arguments: args })).structuredContent;
    seen.push(...res.runs.map((r) => r.id));
    cursor = res.next_cursor;
    if (!cursor) break;
  }
  const bad = await client.callTool({ name: 'list_runs', arguments: { cursor: 'nope' } });

  // Assert
  assert.ok(all.runs.length >= 3, `${all.runs.length} runs`);
  assert.equal(all.next_cursor, null);
  assert.deepEqual(seen, all.runs.map((r) => r.id));
  assert.equal(bad.isError, true);
  assert.match(bad.content[0].text, /cursor/);
  await client.close();
});

test('a run of another user is not found through MCP, and cannot be canceled', async () => {
  // Arrange
  const alice = await connect(ALICE);
  const bob = await connect(BOB);
  const started = await alice.callTool({ name: 'start_run', arguments: { objective: 'Alice only' } });
  const runId = started.structuredContent.id;

  // Act
  const peek = await bob.callTool({ name: 'get_run', arguments: { run_id: runId } });
  const cancel = await bob.callTool({ name: 'cancel', arguments: { run_id: runId } });
  const mine = await alice.callTool({ name: 'get_run', arguments: { run_id: runId } });

  // Assert
  assert.equal(peek.isError, true);
  assert.match(peek.content[0].text, /not found/i);
  assert.equal(cancel.isError, true);
  assert.notEqual(mine.structuredContent.status, 'canceled');
  await alice.close();
  await bob.close();
});

test('invalid arguments are refused before anything runs', async () => {
  // Arrange
  const client = await connect(ALICE);

  // Act
  const empty = await client.callTool({ name: 'start_run', arguments: { objective: '' } });
  const unknown = client.callTool({ name: 'start_run', arguments: { objective: 'x', colour: 'red' } });

  // Assert
  assert.equal(empty.isError, true);
  assert.match(empty.content[0].text, /objective/);
  await assert.rejects(unknown, /colour/);
  await client.close();
});

test('MCP without a valid bearer token is refused with 401', async () => {
  // Act
  const res = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });

  // Assert
  assert.equal(res.status, 401);
  assert.match(res.headers.get('content-type'), /problem\+json/);
});
