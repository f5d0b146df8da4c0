// A real `longrun serve` for the tests: started on a free loopback port (or a given one, to
// restart it where the client expects it), on a data dir that outlives restarts.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { longrunBin } from '../scripts/schema-source.mjs';

export const ALICE = 'lr_client_alice_token';
export const BOB = 'lr_client_bob_token';

// Never completes: writes a note per iteration, 120 ms per planner call, so a run lasts as
// many iterations as its budget allows.
const LOOP = {
  planner: [{
    content: {
      status: { exit_signal: false, needs_user_input: false, progress_summary: 'note {{iteration}}', remaining_work: ['more'] },
      tool_calls: [{ name: 'doc_write', args: { path: 'notes/{{iteration}}.md', content: 'n{{iteration}}' } }],
    },
    usage: { input_tokens: 10, output_tokens: 5 },
    latency_ms: 120,
  }],
};

export class Server {
  constructor() {
    this.dir = mkdtempSync(join(tmpdir(), 'longrun-client-'));
    this.script = join(this.dir, 'loop.json');
    writeFileSync(this.script, JSON.stringify(LOOP));
    this.port = 0;
  }

  async start() {
    const args = ['serve', '--port', String(this.port), '--active-limit', '100',
      '--data-dir', join(this.dir, 'data'), '--model', `script:${this.script}`];
    this.child = spawn(longrunBin(), args, {
      env: { ...process.env, LONGRUN_TOKENS: `${ALICE}:alice,${BOB}:bob` },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const base = await new Promise((resolve, reject) => {
      this.child.once('exit', (code) => reject(new Error(`longrun serve exited with ${code}`)));
      createInterface({ input: this.child.stdout }).on('line', (line) => {
        const m = line.match(/listening on (http:\/\/\S+)/);
        if (m) resolve(m[1]);
      });
    });
    this.base = base;
    this.port = Number(new URL(base).port);
    return base;
  }

  async kill() {
    const exited = new Promise((r) => this.child.once('exit', r));
    this.child.kill('SIGKILL');
    await exited;
  }

  async stop() {
    if (this.child && this.child.exitCode === null) {
      const exited = new Promise((r) => this.child.once('exit', r));
      this.child.kill('SIGTERM');
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
