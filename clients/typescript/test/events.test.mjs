// The typed event payloads (src/events.ts) against what a real `longrun serve` writes: runs are
// driven through most of the log's event types, and every event they wrote is compiled, as a
// literal, against its type's payload with the TypeScript compiler: a field the server sends
// that the type lacks, a field the type requires that the server leaves out, or a value of
// another type fails.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { LongrunClient, SETTLED } from '../dist/esm/index.js';
import { Server, ALICE } from './server.mjs';

const here = fileURLToPath(new URL('..', import.meta.url));
const tsc = createRequire(join(here, 'package.json')).resolve('typescript/bin/tsc');
const server = new Server();
const work = mkdtempSync(join(tmpdir(), 'longrun-client-events-'));
let alice;

before(async () => {
  await server.start();
  alice = new LongrunClient({ baseUrl: server.base, token: ALICE });
});

after(async () => {
  await server.stop();
  rmSync(work, { recursive: true, force: true });
});

async function until(id, ok) {
  for (let i = 0; i < 400; i++) {
    const run = await alice.getRun(id);
    if (ok(run)) return run;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`run ${id} never got there`);
}
const settled = (run) => SETTLED.includes(run.status) && !run.cancel_requested;

/** Runs taken through creation, budgets, continue, follow-up, approval, messages, edits, pause and cancel. */
async function drive() {
  const stopped = await alice.createRun({ objective: 'typed events', budgets: { max_iterations: 1 } });
  await until(stopped.id, settled);
  await alice.continue(stopped.id, { budgets: { max_iterations: 2 } });
  await until(stopped.id, (r) => settled(r) && r.iteration === 2);
  await alice.followUp(stopped.id, { question: 'And then?', budgets: { max_iterations: 3 } });
  await until(stopped.id, (r) => settled(r) && r.iteration === 3);

  const approval = await alice.createRun({ objective: 'plan first', permission_mode: 'approve_plan', budgets: { max_iterations: 3 } });
  await until(approval.id, (r) => r.status === 'waiting_on_user');
  await alice.message(approval.id, 'Metric units, please.');
  await alice.patch(approval.id, { objective: 'plan first, edited', plan: [{ id: 's1', title: 'Outline', status: 'done' }] });
  await alice.respond(approval.id, { approve: true });
  await until(approval.id, settled);

  const paused = await alice.createRun({ objective: 'pause me', budgets: { max_iterations: 50 } });
  await alice.pause(paused.id);
  await until(paused.id, (r) => r.status === 'paused');
  await alice.continue(paused.id);
  await alice.cancel(paused.id);
  await until(paused.id, (r) => r.status === 'canceled');

  const events = [];
  for (const id of [stopped.id, approval.id, paused.id]) events.push(...(await alice.eventsPage(id, { limit: 1000 })).events);
  return events;
}

test('every event a run writes is what its type says (the fields, no more, no fewer, of their types), and a switch on the type narrows the payload', async () => {
  // Arrange
  const events = await drive();
  const lines = events.map((e, i) => `const e${i}: Exactly<${JSON.stringify(e.type)}> = ${JSON.stringify(e.payload)};`);
  const file = join(work, 'events.ts');
  writeFileSync(file, [
    `import type { EventPayloads } from ${JSON.stringify(join(here, 'dist', 'esm', 'index.js'))};`,
    '// The named fields of a payload, without the index signature that keeps fields a newer server adds.',
    'type Known<T> = T extends unknown ? { [K in keyof T as string extends K ? never : K]: T[K] } : never;',
    'type Exactly<K extends keyof EventPayloads> = Known<EventPayloads[K]>;',
    ...lines,
    `export const all = [${events.map((_, i) => `e${i}`).join(', ')}];`,
  ].join('\n'));

  // A consumer's switch on the type narrows the payload.
  const narrow = join(work, 'narrow.ts');
  writeFileSync(narrow, `
import type { RunEvent } from ${JSON.stringify(join(here, 'dist', 'esm', 'index.js'))};
export function line(e: RunEvent): string {
  switch (e.type) {
    case "iteration_committed": return \`\${e.payload.iteration}: \${e.payload.summary} (\${e.payload.status})\`;
    case "run_completed": return e.payload.stopping_reason.detail;
    case "iteration_cost_update": return (e.payload.cost_usd ?? 0).toFixed(4);
    default: return e.type;
  }
}
// @ts-expect-error a committed iteration has no stopping reason
export const wrong = (e: Extract<RunEvent, { type: "iteration_committed" }>) => e.payload.stopping_reason.detail;
`);

  // Act
  const compiled = await promisify(execFile)(process.execPath, [tsc, '--noEmit', '--strict', '--exactOptionalPropertyTypes',
    '--target', 'es2022', '--module', 'nodenext', '--moduleResolution', 'nodenext', file, narrow], { encoding: 'utf8' })
    .then(() => '', (e) => e.stdout || String(e));

  // Assert
  assert.equal(compiled, '', `payloads that do not match their types:\n${compiled}`);
  const seen = new Set(events.map((e) => e.type));
  for (const kind of ['run_created', 'iteration_started', 'iteration_cost_update', 'iteration_committed', 'run_stopped',
    'run_continued', 'follow_up_asked', 'run_waiting', 'message_posted', 'run_patched', 'user_responded', 'pause_requested',
    'run_paused', 'run_resumed', 'cancel_requested', 'run_canceled']) {
    assert.ok(seen.has(kind), `the runs wrote a ${kind} event (saw ${[...seen].join(', ')})`);
  }
});
