// The client against a real `longrun serve`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { LongrunClient, LongrunError, ENDED } from '../dist/esm/index.js';
import { Server, ALICE, BOB } from './server.mjs';

const server = new Server();
let alice;

before(async () => {
  await server.start();
  alice = new LongrunClient({ baseUrl: server.base, token: ALICE });
});

after(() => server.stop());

async function collect(iterator) {
  const out = [];
  for await (const e of iterator) out.push(e);
  return out;
}

test('events follow a run to its end and resume across a server restart with no gap or duplicate', async () => {
  // Arrange
  const run = await alice.createRun({ objective: 'notes', budgets: { max_iterations: 12 } });
  const seen = [];

  // Act: kill -9 the server after a few events, start it again on the same port and data.
  for await (const e of alice.events(run.id, { retryMs: 100 })) {
    seen.push(e);
    if (seen.length === 5) {
      await server.kill();
      await server.start();
    }
  }
  const done = await alice.getRun(run.id);

  // Assert
  assert.ok(ENDED.includes(done.status), done.status);
  assert.equal(done.iteration, 12);
  assert.deepEqual(seen.map((e) => e.seq), Array.from({ length: done.event_seq }, (_, i) => i + 1));
  assert.equal(seen.at(-1).type, `run_${done.status}`, 'the last event is the run ending');
});

test('long-poll yields the same events as the stream', async () => {
  // Arrange
  const run = await alice.createRun({ objective: 'notes', budgets: { max_iterations: 3 } });

  // Act
  const polled = await collect(alice.events(run.id, { transport: 'poll' }));
  const streamed = await collect(alice.events(run.id, { transport: 'sse' }));
  const later = await collect(alice.events(run.id, { after: 4 }));

  // Assert
  assert.deepEqual(polled.map((e) => e.seq), streamed.map((e) => e.seq));
  assert.deepEqual(polled, streamed);
  assert.deepEqual(later.map((e) => e.seq), streamed.slice(4).map((e) => e.seq));
});

test('a report says what the run made, typed, with its title, narrative and headline', async () => {
  // Arrange
  const run = await alice.createRun({ objective: 'Two notes', budgets: { max_iterations: 2 } });
  await collect(alice.events(run.id));

  // Act
  const report = await alice.report(run.id);

  // Assert: two notes written once each, the run stopped at its iteration budget.
  assert.equal(report.title, 'Stopped: Two notes');
  assert.equal(report.headline, 'note 2');
  assert.match(report.summary, /^You asked: Two notes\./);
  assert.equal(report.summary_source, 'records');
  assert.deepEqual(report.what_changed.created.map((c) => [c.type, c.id, c.iteration]),
    [['document', 'notes/1.md', 1], ['document', 'notes/2.md', 2]]);
  assert.deepEqual(report.what_changed.updated, []);
  assert.equal(report.metrics.total_tokens, 30);
  assert.equal(report.stopping_reason.type, 'max_iterations');
  assert.deepEqual(report.criteria, [], 'a run without criteria has no verdicts');
});

test('runs are listed page after page, newest first, and steered by pause, patch, continue, a message and cancel', async () => {
  // Arrange
  const bob = new LongrunClient({ baseUrl: server.base, token: BOB });
  const ids = [];
  for (let i = 0; i < 5; i++) ids.push((await bob.createRun({ objective: `bob ${i}`, budgets: { max_iterations: 50 } })).id);

  // Act
  const listed = [];
  for await (const r of bob.listRuns({ pageSize: 2 })) listed.push(r.id);
  const paused = await bob.pause(ids[0]);
  const patched = await bob.patch(ids[0], { objective: 'bob 0, edited' });
  // A running run pauses after the iteration in flight commits: only then can it be resumed.
  let held = paused;
  for (let i = 0; i < 200 && held.status !== 'paused'; i++) {
    await new Promise((r) => setTimeout(r, 50));
    held = await bob.getRun(ids[0]);
  }
  const resumed = await bob.continue(ids[0]);
  const told = await bob.message(ids[1], 'Focus on oolong.');
  const canceled = await Promise.all(ids.map((id) => bob.cancel(id)));

  // Assert
  assert.deepEqual(listed, [...ids].reverse());
  assert.ok(['paused', 'running', 'queued'].includes(paused.status));
  assert.equal(patched.id, ids[0]);
  assert.equal(held.status, 'paused');
  assert.equal(told.id, ids[1]);
  assert.notEqual(resumed.status, 'paused');
  for (const r of canceled) assert.ok(r.status === 'canceled' || r.cancel_requested, r.status);
});

test('problems are typed errors, and a bad token calls onUnauthorized', async () => {
  // Arrange
  let signedOut = 0;
  const stranger = new LongrunClient({ baseUrl: server.base, token: 'nope', onUnauthorized: () => signedOut++ });
  const bob = new LongrunClient({ baseUrl: server.base, token: BOB });
  const mine = await alice.createRun({ objective: 'private', budgets: { max_iterations: 1 } });

  // Act
  const invalid = await alice.createRun({ objective: '' }).catch((e) => e);
  // A misspelt budget is sent as written, so the server refuses it instead of a default applying.
  const typo = await alice.createRun({ objective: 'three iterations', budgets: { max_iteration: 3 } }).catch((e) => e);
  const unauthorized = await stranger.getRun(mine.id).catch((e) => e);
  const hidden = await bob.getRun(mine.id).catch((e) => e);
  const unreachable = await new LongrunClient({ baseUrl: 'http://127.0.0.1:9' }).config().catch((e) => e);

  // Assert
  assert.ok(invalid instanceof LongrunError);
  assert.equal(invalid.status, 422);
  assert.match(invalid.detail, /objective/);
  assert.ok(typo instanceof LongrunError, String(typo));
  assert.equal(typo.status, 422);
  assert.equal(typo.title, 'Invalid request');
  assert.match(typo.detail, /unknown field `max_iteration`.*max_iterations/);
  assert.equal(unauthorized.status, 401);
  assert.equal(signedOut, 1);
  assert.equal(hidden.status, 404);
  assert.equal(hidden.title, 'Not found');
  assert.equal(unreachable.status, 0);
});

test('schedules, webhooks and tools round-trip, and secrets never come back', async () => {
  // Act
  const schedule = await alice.createSchedule({ cron: '0 9 * * 1-5', template: { objective: 'digest' } });
  const schedules = await alice.listSchedules();
  await alice.deleteSchedule(schedule.id);
  const afterDelete = await alice.listSchedules();
  await alice.putWebhooks([{ url: 'https://hooks.example.com/longrun', secret: '0123456789abcdef-client' }]);
  const hooks = await alice.getWebhooks();
  await alice.registerTool({
    name: 'lookup', description: 'Looks a word up', url: 'https://tools.example.com/lookup',
    secret: '0123456789abcdef-tool', write: false,
    parameters: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
  });
  const tools = await alice.listTools();
  await alice.deleteTool('lookup');
  const config = await alice.config();

  // Assert
  assert.ok(schedules.schedules.some((s) => s.id === schedule.id));
  assert.ok(!afterDelete.schedules.some((s) => s.id === schedule.id));
  assert.deepEqual(hooks, { webhooks: [{ url: 'https://hooks.example.com/longrun' }] });
  assert.ok(tools.tools.some((t) => t.name === 'lookup'));
  assert.ok(!JSON.stringify(tools).includes('0123456789abcdef-tool'));
  assert.ok(config.models.length > 0);
});

test('a create whose answer is lost is retried under the same idempotency key and makes one run', async () => {
  // Arrange: a fetch that lets the first POST reach the server, then loses its answer.
  let lost = 0;
  const keys = [];
  const dropping = async (input, init) => {
    const res = await fetch(input, init);
    if (init?.method === 'POST') keys.push(init.headers['idempotency-key']);
    if (init?.method === 'POST' && lost++ === 0) throw new TypeError('socket hang up');
    return res;
  };
  const carol = new LongrunClient({ baseUrl: server.base, token: BOB, fetch: dropping });
  const before = (await carol.listRunsPage({ limit: 200 })).runs.length;

  // Act
  const run = await carol.createRun({ objective: 'made once though sent twice' });
  const again = await carol.createRun({ objective: 'made once though sent twice' }, { idempotencyKey: keys[0] });

  // Assert
  assert.equal(keys.length, 3);
  assert.equal(keys[0], keys[1], 'the retry carries the first attempt\'s key');
  assert.match(keys[0], /^[0-9a-f-]{36}$/);
  assert.equal(again.id, run.id);
  assert.equal((await carol.listRunsPage({ limit: 200 })).runs.length, before + 1);
});
