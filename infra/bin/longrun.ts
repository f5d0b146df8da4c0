#!/usr/bin/env node
// The CDK app: parameters come from context (`-c stage=prod -c appBaseUrl=https://…`), or
// from cdk.json's defaults for an offline synth.
import * as fs from 'node:fs';
import * as path from 'node:path';

import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';

import { stubConsole } from '../lib/console';
import { FunctionAssets, LongrunStack, type LongrunStackProps } from '../lib/longrun-stack';

const app = new App();
const ctx = (key: string): string | undefined => {
  const v = app.node.tryGetContext(key);
  return v === undefined || v === '' ? undefined : String(v);
};

const root = path.resolve(__dirname, '..', '..', '..');
// The functions `make package` built, or (`-c stubAssets=true`) stand-ins that only synthesize.
const assets = ctx('stubAssets') === 'true'
  ? FunctionAssets.stubs()
  : FunctionAssets.fromBuild(ctx('assetsDir') ?? path.join(root, 'target', 'lambda'));
// The console is hosted unless `-c console=false`; its build is web/dist (make web).
let consoleDir: string | undefined = ctx('consoleDir') ?? path.join(root, 'web', 'dist');
if (ctx('console') === 'false') {
  consoleDir = undefined;
} else if (!fs.existsSync(path.join(consoleDir, 'index.html'))) {
  consoleDir = ctx('stubAssets') === 'true' ? stubConsole(path.join(root, 'infra', 'cdk.out', 'stub-console')) : undefined;
}
const issuer = ctx('jwtIssuer');
const props: LongrunStackProps = {
  stage: ctx('stage') ?? 'dev',
  appBaseUrl: ctx('appBaseUrl') ?? (consoleDir ? undefined : 'http://localhost:8080'),
  consoleDir,
  jwt: issuer ? { issuer, audience: (ctx('jwtAudience') ?? '').split(',').filter(Boolean) } : undefined,
  llm: {
    models: ctx('models') ?? 'openai:gpt-4.1-mini',
    openaiBaseUrl: ctx('openaiBaseUrl'),
    apiKeySecretName: ctx('llmKeySecret'),
  },
  search: ctx('search') && ctx('searchKeySecret')
    ? { provider: ctx('search') as 'tavily' | 'brave' | 'exa', keySecretName: ctx('searchKeySecret') as string }
    : undefined,
  assets,
  alarmEmail: ctx('alarmEmail'),
  workerMaxConcurrency: ctx('workerMaxConcurrency') ? Number(ctx('workerMaxConcurrency')) : undefined,
  activeRunLimit: ctx('activeLimit') ? Number(ctx('activeLimit')) : undefined,
  modelLimits: ctx('modelLimits'),
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
};
new LongrunStack(app, `longrun-${props.stage}`, props);
Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
