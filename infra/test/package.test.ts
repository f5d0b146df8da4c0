// The construct as a user gets it, outside the repository: `npm pack` run in a copy of this
// folder as a checkout has it (no dist: the tarball's prepack compiles lib/ with its own
// tsconfig, declarations included), installed into a fresh CDK app (test-app/) together with
// examples/existing-stack.ts, compiled there with the app's strict flags, synthesized offline
// into a cloud assembly and asserted, and the app's own assertion test run.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';

const run = promisify(execFile);
const infra = path.join(__dirname, '..', '..');
const quiet = ['--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'];

async function npm(cwd: string, ...args: string[]): Promise<string> {
  return (await run('npm', args, { cwd, encoding: 'utf8', maxBuffer: 16 << 20 })).stdout;
}

type Template = { Resources: Record<string, { Type: string; Properties: Record<string, unknown> }> };

describe('@longrun/cdk packed and used from a fresh CDK app', () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'longrun-cdk-package-'));
  const checkout = path.join(work, 'checkout');
  const app = path.join(work, 'app');
  let tarball = '';
  let files: string[] = [];

  before(async () => {
    fs.mkdirSync(checkout);
    for (const f of ['package.json', 'package-lock.json', 'README.md', 'tsconfig.json', 'tsconfig.lib.json', 'lib']) {
      fs.cpSync(path.join(infra, f), path.join(checkout, f), { recursive: true });
    }
    // The construct reads the dead-letter threshold it shares with the Terraform module.
    fs.mkdirSync(path.join(checkout, 'terraform'));
    fs.copyFileSync(path.join(infra, 'terraform', 'queue.json'), path.join(checkout, 'terraform', 'queue.json'));
    // The build tools only (typescript and the CDK's types), as `npm ci` would put them there.
    fs.symlinkSync(path.join(infra, 'node_modules'), path.join(checkout, 'node_modules'));
    await npm(checkout, 'pack', '--pack-destination', work, ...quiet);
    const name = fs.readdirSync(work).find((f) => f.endsWith('.tgz'));
    assert.ok(name, 'npm pack wrote a tarball');
    tarball = path.join(work, name);
    files = (await run('tar', ['-tzf', tarball], { encoding: 'utf8' })).stdout.split('\n').filter(Boolean)
      .map((f) => f.replace(/^package\//, ''));

    fs.cpSync(path.join(infra, 'test-app'), app, { recursive: true });
    fs.copyFileSync(path.join(infra, 'examples', 'existing-stack.ts'), path.join(app, 'existing-stack.ts'));
    await npm(app, 'ci', ...quiet);
    await npm(app, 'install', '--no-save', ...quiet, tarball);
    await run(process.execPath, [path.join(app, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', app], { cwd: app });
  });

  after(() => fs.rmSync(work, { recursive: true, force: true }));

  it('ships compiled JavaScript with declarations and a README, no TypeScript sources or tests', () => {
    for (const f of ['package.json', 'README.md', 'dist/lib/index.js', 'dist/lib/index.d.ts', 'dist/lib/longrun-service.js',
      'dist/lib/longrun-service.d.ts']) {
      assert.ok(files.includes(f), `${f} is in the tarball: ${files.join(', ')}`);
    }
    assert.deepEqual(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts')), []);
    assert.ok(!files.some((f) => f.includes('test') || f.startsWith('node_modules/')), files.join(', '));
    const manifest = JSON.parse(fs.readFileSync(path.join(app, 'node_modules', '@longrun', 'cdk', 'package.json'), 'utf8'));
    assert.deepEqual(Object.keys(manifest.peerDependencies).sort(), ['aws-cdk-lib', 'constructs']);
    assert.equal(manifest.dependencies, undefined, 'aws-cdk-lib and constructs are the app\'s own, not a second copy');
  });

  it('synthesizes the example offline with -c stubAssets=true: longrun on the team API, behind its authorizer', async () => {
    // Act: what `cdk synth -c stubAssets=true` does, without the CLI.
    const out = path.join(app, 'cdk.out');
    await run(process.execPath, [path.join(app, 'dist', 'existing-stack.js')], {
      cwd: app, env: { ...process.env, CDK_OUTDIR: out, CDK_CONTEXT_JSON: JSON.stringify({ stubAssets: 'true' }) },
    });
    const t = JSON.parse(fs.readFileSync(path.join(out, 'team-with-longrun.template.json'), 'utf8')) as Template;
    const of = (type: string) => Object.entries(t.Resources).filter(([, r]) => r.Type === type);

    // Assert
    const apis = of('AWS::ApiGatewayV2::Api');
    assert.equal(apis.length, 1, 'no API of its own');
    const [apiId] = apis[0] ?? [];
    const routes = of('AWS::ApiGatewayV2::Route').map(([, r]) => r.Properties);
    assert.deepEqual(routes.map((r) => r.RouteKey).sort(), ['ANY /v1/{proxy+}', 'POST /mcp']);
    for (const r of routes) {
      assert.deepEqual(r.ApiId, { Ref: apiId });
      assert.equal(r.AuthorizationType, 'JWT');
    }
    const fns = of('AWS::Lambda::Function').map(([, r]) => r.Properties);
    assert.deepEqual(fns.map((f) => String(f.FunctionName)).sort(),
      ['longrun-team-api', 'longrun-team-notifier', 'longrun-team-sweeper', 'longrun-team-worker']);
    // Each function's code is a zip asset of the assembly, its folder written into cdk.out.
    const manifest = JSON.parse(fs.readFileSync(path.join(out, 'team-with-longrun.assets.json'), 'utf8')) as {
      files: Record<string, { source: { path: string; packaging?: string }; destinations: Record<string, { objectKey: string }> }>;
    };
    for (const f of fns) {
      const key = (f.Code as { S3Key?: unknown }).S3Key;
      const asset = Object.values(manifest.files).find((a) => Object.values(a.destinations).some((d) => d.objectKey === key));
      assert.ok(asset, `${String(f.FunctionName)}'s code ${String(key)} is an asset of the assembly`);
      assert.equal(asset.source.packaging, 'zip');
      assert.ok(fs.existsSync(path.join(out, asset.source.path, 'bootstrap')), 'the stub bootstrap is in cdk.out');
    }
  });

  it('refuses to synthesize the example without assetsDir or stubAssets, saying which to give', async () => {
    const failed = await run(process.execPath, [path.join(app, 'dist', 'existing-stack.js')], {
      cwd: app, env: { ...process.env, CDK_OUTDIR: path.join(app, 'cdk.out.none'), CDK_CONTEXT_JSON: '{}' },
    }).then(() => undefined, (e: { stderr: string }) => e);
    assert.ok(failed, 'the synth failed');
    assert.match(failed.stderr, /assetsDir=.*stubAssets=true/s);
  });

  it('passes the app\'s own assertions (aws-cdk-lib/assertions against the installed construct)', async () => {
    // A test runner of its own, not a subtest of this one.
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'NODE_TEST_CONTEXT'));
    const { stdout } = await run(process.execPath, ['--test', '--test-reporter=tap', path.join(app, 'dist', 'app.test.js')],
      { cwd: app, env, encoding: 'utf8' });
    assert.match(stdout, /# pass 1/);
    assert.match(stdout, /# fail 0/);
  });
});
