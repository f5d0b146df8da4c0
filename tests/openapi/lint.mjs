// The OpenAPI document under Redocly's recommended rules and Spectral's `spectral:oas` ruleset:
// both the one `longrun openapi` prints and the one a running `longrun serve` serves (with its
// models and trusted hosts). Any problem, an error, a warning or a hint, fails.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const bin = process.env.LONGRUN_BIN ?? join(root, 'target', 'debug', 'longrun');
const redocly = join(here, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js');
const spectral = join(here, 'node_modules', '@stoplight', 'spectral-cli', 'dist', 'index.js');
const dir = mkdtempSync(join(tmpdir(), 'longrun-openapi-'));
const token = 'lr_openapi_lint_token';

async function served() {
  const server = spawn(bin, ['serve', '--port', '0', '--data-dir', join(dir, 'data')], {
    env: { ...process.env, LONGRUN_TOKENS: `${token}:linter`, LONGRUN_FETCH_TRUSTED_PRIVATE: 'hooks.test,127.0.0.1' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const base = await new Promise((resolve, reject) => {
      server.once('exit', (code) => reject(new Error(`longrun serve exited with ${code}`)));
      createInterface({ input: server.stdout }).on('line', (line) => {
        const m = line.match(/listening on (http:\/\/\S+)/);
        if (m) resolve(m[1]);
      });
    });
    const res = await fetch(`${base}/v1/openapi.json`);
    if (!res.ok) throw new Error(`GET /v1/openapi.json: ${res.status}`);
    return await res.text();
  } finally {
    server.kill('SIGTERM');
  }
}

function redoclyLint(name, file) {
  let out;
  try {
    out = execFileSync(process.execPath, [redocly, 'lint', file, '--config', join(here, 'redocly.yaml'), '--format', 'json'],
      // No telemetry, no update check: the lint talks to nothing.
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } });
  } catch (e) {
    out = e.stdout;
    if (!out) throw e;
  }
  const { problems = [] } = JSON.parse(out.slice(out.indexOf('{')));
  for (const p of problems) {
    const where = p.location?.[0]?.pointer ?? '';
    console.error(`${name}: ${p.severity} ${p.ruleId}: ${p.message} ${where}`);
  }
  return problems.length;
}

const SEVERITY = ['error', 'warning', 'info', 'hint'];

function spectralLint(name, file) {
  const report = join(dir, `${name}.spectral.json`);
  try {
    execFileSync(process.execPath, [spectral, 'lint', file, '--ruleset', join(here, '.spectral.yaml'), '--format', 'json',
      '--output', report, '--fail-severity', 'hint', '--quiet'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    // Exit 1 is "found something": the report says what; anything else is Spectral failing.
    if (e.status !== 1) throw e;
  }
  const results = JSON.parse(readFileSync(report, 'utf8'));
  for (const r of results) {
    console.error(`${name}: spectral ${SEVERITY[r.severity] ?? r.severity} ${r.code}: ${r.message} ${r.path.join('.')}`);
  }
  return results.length;
}

function lint(name, text) {
  const file = join(dir, `${name}.json`);
  writeFileSync(file, text);
  return redoclyLint(name, file) + spectralLint(name, file);
}

try {
  const printed = execFileSync(bin, ['openapi'], { encoding: 'utf8' });
  const count = lint('printed', printed) + lint('served', await served());
  if (count > 0) {
    console.error(`openapi lint: ${count} problem(s) under Redocly's recommended rules and spectral:oas`);
    process.exitCode = 1;
  } else {
    console.error("openapi lint: both documents are clean under Redocly's recommended rules and spectral:oas");
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
