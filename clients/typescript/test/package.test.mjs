// The client as a user gets it, outside the repository: `npm pack` run in a copy of this folder
// as a checkout has it (no node_modules, no dist), the tarball installed into a fresh ES-module
// project and a fresh CommonJS project (test/consumer), each typechecked strictly and run against
// a real `longrun serve`; and `npm install <path>` of that checkout.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { Server, ALICE, BOB } from './server.mjs';

const run = promisify(execFile);
const here = fileURLToPath(new URL('..', import.meta.url));
const quiet = ['--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'];
const work = mkdtempSync(join(tmpdir(), 'longrun-client-package-'));
const checkout = join(work, 'checkout');
const server = new Server();
let tarball;

async function npm(cwd, ...args) {
  return (await run('npm', args, { cwd, encoding: 'utf8', maxBuffer: 16 << 20 })).stdout;
}

before(async () => {
  mkdirSync(checkout);
  for (const f of ['package.json', 'package-lock.json', 'README.md', 'LICENSE', 'tsconfig.json', 'tsconfig.cjs.json', 'scripts', 'src']) {
    cpSync(join(here, f), join(checkout, f), { recursive: true });
  }
  await npm(checkout, 'pack', '--pack-destination', work, ...quiet);
  const [name] = readdirSync(work).filter((f) => f.endsWith('.tgz'));
  assert.ok(name, 'npm pack wrote a tarball');
  tarball = join(work, name);
  await server.start();
});

after(async () => {
  await server.stop();
  rmSync(work, { recursive: true, force: true });
});

test('npm pack of a fresh checkout builds the package: ES modules, CommonJS, their types, the README and the license', async () => {
  const files = (await run('tar', ['-tzf', tarball], { encoding: 'utf8' })).stdout.split('\n').map((f) => f.replace(/^package\//, ''));
  for (const f of ['README.md', 'LICENSE', 'package.json', 'dist/esm/index.js', 'dist/esm/events.d.ts', 'dist/esm/index.d.ts', 'dist/cjs/index.js',
    'dist/cjs/index.d.ts', 'dist/cjs/package.json']) {
    assert.ok(files.includes(f), `${f} is in the tarball: ${files.join(', ')}`);
  }
  assert.ok(!files.some((f) => f.startsWith('node_modules/') || f.startsWith('test/')), files.join(', '));
});

for (const [type, token, user] of [['module', ALICE, 'alice'], ['commonjs', BOB, 'bob']]) {
  test(`a fresh ${type} project installs the tarball, typechecks strictly and runs create, stream, resume, page and a typed 404`, async () => {
    // Arrange: the user's project, outside the repository.
    const project = join(work, type);
    cpSync(join(here, 'test', 'consumer'), project, { recursive: true });
    const manifest = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8'));
    writeFileSync(join(project, 'package.json'), JSON.stringify({ ...manifest, type }, null, 2));
    await npm(project, 'ci', ...quiet);
    await npm(project, 'install', '--no-save', ...quiet, tarball);

    // Act
    await run(process.execPath, [join(project, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', project], { cwd: project });
    const compiled = readFileSync(join(project, 'dist', 'main.js'), 'utf8');
    const { stdout } = await run(process.execPath, [join(project, 'dist', 'main.js')], {
      cwd: project, env: { ...process.env, LONGRUN_URL: server.base, LONGRUN_TOKEN: token },
    });
    const seen = JSON.parse(stdout);

    // Assert
    if (type === 'commonjs') assert.match(compiled, /require\("@longrun\/client"\)/);
    else assert.match(compiled, /from "@longrun\/client"/);
    assert.equal(seen.module, type === 'module' ? 'esm' : 'commonjs');
    assert.deepEqual(seen.streamed, [1, 2]);
    assert.ok(['completed', 'stopped', 'canceled', 'failed'].includes(seen.status), `${user}'s run ended: ${seen.status}`);
    assert.equal(seen.last_type, `run_${seen.status}`);
    assert.ok(seen.summaries.length > 0 && seen.summaries.every((s) => typeof s === 'string'), JSON.stringify(seen.summaries));
    assert.deepEqual(seen.resumed, Array.from({ length: seen.event_seq - 2 }, (_, i) => i + 3), 'resumed after 2 with no gap or repeat');
    assert.deepEqual(seen.paged, [seen.created, seen.older], 'every run of the user, newest first, one per page');
    assert.deepEqual(seen.first_page, { runs: 1, next: true });
    assert.deepEqual(seen.not_found, { status: 404, title: 'Not found' });
    assert.equal(seen.webhook, true);
    assert.equal(seen.webhook_tampered, false);
  });
}

test('npm install <path to a fresh checkout> builds it there and both module systems load it', async () => {
  // Arrange
  const project = join(work, 'from-path');
  mkdirSync(project);
  writeFileSync(join(project, 'package.json'), '{ "name": "from-path", "private": true }\n');

  // Act
  await npm(project, 'install', ...quiet, checkout);
  const esm = await run(process.execPath, ['--input-type=module', '-e',
    'const m = await import("@longrun/client"); console.log(typeof m.LongrunClient, typeof m.verifyWebhook)'], { cwd: project });
  const cjs = await run(process.execPath, ['-e',
    'const m = require("@longrun/client"); console.log(typeof m.LongrunClient, typeof m.verifyWebhook)'], { cwd: project });

  // Assert
  assert.equal(esm.stdout.trim(), 'function function');
  assert.equal(cjs.stdout.trim(), 'function function');
});
