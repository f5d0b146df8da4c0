import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import { App, Validations } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';

import { stubConsole } from '../lib/console';
import {
  FunctionAssets,
  LongrunStack,
  MAX_RECEIVES,
  NOTIFIED_STATUSES,
  type LongrunStackProps,
} from '../lib/longrun-stack';

const assets = FunctionAssets.stubs();
const consoleBuild = stubConsole(fs.mkdtempSync(path.join(os.tmpdir(), 'longrun-console-')));
/** The stack hosting its own console: no appBaseUrl, so the CloudFront URL is used. */
const hosted = { consoleDir: consoleBuild, appBaseUrl: undefined };

function props(extra: Partial<LongrunStackProps> = {}): LongrunStackProps {
  return {
    stage: 'test',
    appBaseUrl: 'https://console.example.com/app',
    llm: { models: 'openai:gpt-4.1-mini', apiKeySecretName: 'longrun/openai' },
    assets,
    env: { account: '123456789012', region: 'eu-west-1' },
    ...extra,
  };
}

function synth(extra: Partial<LongrunStackProps> = {}): { stack: LongrunStack; t: Template } {
  const app = new App();
  const stack = new LongrunStack(app, 'longrun-test', props(extra));
  return { stack, t: Template.fromStack(stack) };
}

type Resource = { Type: string; Properties: Record<string, unknown>; Metadata?: unknown };

function resources(t: Template, type: string): [string, Resource][] {
  return Object.entries(t.findResources(type)) as [string, Resource][];
}

/** Logical id of the one function whose FunctionName ends with `-{name}`. */
function fnId(t: Template, name: string): string {
  const found = resources(t, 'AWS::Lambda::Function').filter(([, r]) =>
    String(r.Properties.FunctionName).endsWith(`-${name}`),
  );
  assert.equal(found.length, 1, `one ${name} function`);
  return found[0][0];
}

type Grant = { action: string; resource: string };

/** Every (action, resource) pair granted to the role of function `name`. */
function grantsOf(t: Template, name: string): Grant[] {
  const fn = t.toJSON().Resources[fnId(t, name)];
  const roleId = fn.Properties.Role['Fn::GetAtt'][0];
  const grants: Grant[] = [];
  for (const [, policy] of resources(t, 'AWS::IAM::Policy')) {
    const roles = policy.Properties.Roles as { Ref: string }[];
    if (!roles.some((r) => r.Ref === roleId)) continue;
    const doc = policy.Properties.PolicyDocument as {
      Statement: { Action: string | string[]; Resource: unknown }[];
    };
    for (const s of doc.Statement) {
      for (const action of [s.Action].flat()) {
        for (const resource of [s.Resource].flat()) {
          grants.push({ action, resource: JSON.stringify(resource) });
        }
      }
    }
  }
  return grants;
}

/** Logical id of the one secret the stack creates: the sealing key's. */
function sealKeyId(t: Template): string {
  const secrets = resources(t, 'AWS::SecretsManager::Secret');
  assert.equal(secrets.length, 1, 'one secret');
  return secrets[0][0];
}

type Statement = { Effect?: string; Action: string | string[]; Resource: unknown };

/** Every role (logical id) any policy in the template lets do something with resource `id`,
 *  with the actions: identity policies, inline role policies and managed policies alike. */
function principalsOn(t: Template, id: string): Map<string, Set<string>> {
  const found = new Map<string, Set<string>>();
  const add = (roles: unknown, doc: { Statement: Statement[] }) => {
    for (const s of doc.Statement) {
      if (s.Effect === 'Deny' || !JSON.stringify(s.Resource).includes(`"${id}"`)) continue;
      for (const role of [roles].flat() as { Ref: string }[]) {
        const actions = found.get(role.Ref) ?? new Set<string>();
        for (const a of [s.Action].flat()) actions.add(a);
        found.set(role.Ref, actions);
      }
    }
  };
  for (const [, p] of resources(t, 'AWS::IAM::Policy')) {
    add(p.Properties.Roles, p.Properties.PolicyDocument as { Statement: Statement[] });
  }
  for (const [, p] of resources(t, 'AWS::IAM::ManagedPolicy')) {
    add(p.Properties.Roles ?? [], p.Properties.PolicyDocument as { Statement: Statement[] });
  }
  for (const [roleId, r] of resources(t, 'AWS::IAM::Role')) {
    for (const p of (r.Properties.Policies ?? []) as { PolicyDocument: { Statement: Statement[] } }[]) {
      add({ Ref: roleId }, p.PolicyDocument);
    }
  }
  return found;
}

function can(grants: Grant[], action: string, resourceId?: string): boolean {
  return grants.some(
    (g) => g.action === action && (resourceId === undefined || g.resource.includes(`"${resourceId}"`)),
  );
}

describe('the longrun stack', () => {
  const { t } = synth();

  it('keeps runs in one on-demand, encrypted, point-in-time-recoverable table with TTL and both indexes', () => {
    t.hasResourceProperties('AWS::DynamoDB::Table', {
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: [
        { AttributeName: 'PK', KeyType: 'HASH' },
        { AttributeName: 'SK', KeyType: 'RANGE' },
      ],
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      SSESpecification: { SSEEnabled: true, SSEType: 'KMS', KMSMasterKeyId: Match.anyValue() },
      TimeToLiveSpecification: { AttributeName: 'expires_at', Enabled: true },
      GlobalSecondaryIndexes: Match.arrayWith(
        [
          ['GSI1', 'status'],
          ['GSI2', 'body'],
        ].map(([g, projected]) =>
          Match.objectLike({
            IndexName: g,
            KeySchema: [
              { AttributeName: `${g}PK`, KeyType: 'HASH' },
              { AttributeName: `${g}SK`, KeyType: 'RANGE' },
            ],
            Projection: { ProjectionType: 'INCLUDE', NonKeyAttributes: [projected] },
          }),
        ),
      ),
    });
  });

  it('sends step messages through an encrypted FIFO queue whose failures go to a FIFO dead-letter queue', () => {
    const queues = resources(t, 'AWS::SQS::Queue');
    const step = queues.find(([, q]) => String(q.Properties.QueueName).endsWith('-steps.fifo'));
    const dlq = queues.find(([, q]) => String(q.Properties.QueueName).endsWith('-steps-dlq.fifo'));
    assert.ok(step && dlq, 'step queue and DLQ exist');
    assert.equal(step[1].Properties.FifoQueue, true);
    // High-throughput FIFO: dedup ids unique per run's group, throughput per run.
    assert.equal(step[1].Properties.DeduplicationScope, 'messageGroup');
    assert.equal(step[1].Properties.FifoThroughputLimit, 'perMessageGroupId');
    assert.equal(dlq[1].Properties.FifoQueue, true);
    assert.deepEqual(step[1].Properties.RedrivePolicy, {
      deadLetterTargetArn: { 'Fn::GetAtt': [dlq[0], 'Arn'] },
      maxReceiveCount: MAX_RECEIVES,
    });
    for (const [, q] of queues) assert.ok(q.Properties.KmsMasterKeyId, 'every queue is encrypted');
  });

  it('gives step messages a visibility timeout of at least six worker timeouts', () => {
    const step = resources(t, 'AWS::SQS::Queue').find(([, q]) =>
      String(q.Properties.QueueName).endsWith('-steps.fifo'),
    );
    const worker = t.toJSON().Resources[fnId(t, 'worker')];
    assert.ok(step);
    assert.ok(
      Number(step[1].Properties.VisibilityTimeout) >= 6 * Number(worker.Properties.Timeout),
      `visibility ${step[1].Properties.VisibilityTimeout} vs timeout ${worker.Properties.Timeout}`,
    );
  });

  it('feeds the worker from the step queue with per-record failures and bounded concurrency', () => {
    t.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: fnId(t, 'worker') },
      EventSourceArn: Match.anyValue(),
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: Match.anyValue() },
    });
    t.resourceCountIs('AWS::Lambda::EventSourceMapping', 1);
  });

  it('publishes outcomes on an encrypted topic and subscribes the notifier filtered by status', () => {
    t.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: Match.anyValue() });
    t.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'lambda',
      Endpoint: { 'Fn::GetAtt': [fnId(t, 'notifier'), 'Arn'] },
      FilterPolicy: { status: NOTIFIED_STATUSES },
      RedrivePolicy: { deadLetterTargetArn: Match.anyValue() },
    });
  });

  it('puts every route behind the JWT authorizer except the health check', () => {
    const routes = resources(t, 'AWS::ApiGatewayV2::Route');
    assert.ok(routes.length >= 2);
    for (const [, r] of routes) {
      const open = r.Properties.RouteKey === 'GET /healthz';
      const preflight = String(r.Properties.RouteKey).startsWith('OPTIONS ');
      assert.ok(!preflight, 'CORS preflight is answered by API Gateway, not a route');
      assert.equal(
        r.Properties.AuthorizationType,
        open ? 'NONE' : 'JWT',
        `${r.Properties.RouteKey} authorization`,
      );
      if (!open) assert.ok(r.Properties.AuthorizerId, `${r.Properties.RouteKey} names the authorizer`);
    }
    assert.ok(routes.some(([, r]) => r.Properties.RouteKey === 'ANY /v1/{proxy+}'));
    assert.ok(routes.some(([, r]) => r.Properties.RouteKey === 'POST /mcp'));
    t.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
      AuthorizerType: 'JWT',
      IdentitySource: ['$request.header.Authorization'],
      JwtConfiguration: { Audience: Match.anyValue(), Issuer: Match.anyValue() },
    });
  });

  it('allows the console origin only and writes access logs', () => {
    t.hasResourceProperties('AWS::ApiGatewayV2::Api', {
      ProtocolType: 'HTTP',
      CorsConfiguration: Match.objectLike({ AllowOrigins: ['https://console.example.com'] }),
    });
    t.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      AccessLogSettings: { DestinationArn: Match.anyValue(), Format: Match.stringLikeRegexp('requestId') },
      DefaultRouteSettings: Match.objectLike({ ThrottlingRateLimit: Match.anyValue() }),
    });
  });

  it('runs four arm64 provided.al2023 functions with retained, encrypted logs', () => {
    for (const name of ['api', 'worker', 'notifier', 'sweeper']) {
      const fn = t.toJSON().Resources[fnId(t, name)];
      assert.equal(fn.Properties.Runtime, 'provided.al2023');
      assert.deepEqual(fn.Properties.Architectures, ['arm64']);
      assert.equal(fn.Properties.Handler, 'bootstrap');
      assert.ok(fn.Properties.KmsKeyArn, `${name} environment is encrypted`);
      assert.ok(fn.Properties.Environment.Variables.LONGRUN_TABLE);
    }
    const groups = resources(t, 'AWS::Logs::LogGroup');
    assert.ok(groups.length >= 5);
    for (const [, g] of groups) {
      assert.ok(g.Properties.RetentionInDays, 'retention is set');
      assert.ok(g.Properties.KmsKeyId, 'logs are encrypted');
    }
  });

  it('keeps the sealing key in a generated 64-character, KMS-encrypted secret that outlives the stack', () => {
    const keyId = resources(t, 'AWS::KMS::Key')[0][0];
    for (const [stage, template] of [['test', t], ['prod', synth({ stage: 'prod' }).t]] as const) {
      template.hasResource('AWS::SecretsManager::Secret', {
        DeletionPolicy: 'Retain',
        UpdateReplacePolicy: 'Retain',
        Properties: Match.objectLike({
          Name: `longrun-${stage}-seal-key`,
          GenerateSecretString: { PasswordLength: 64, ExcludePunctuation: true, IncludeSpace: false },
          KmsKeyId: { 'Fn::GetAtt': [keyId, 'Arn'] },
        }),
      });
      // Rotating it would orphan every sealed value: no schedule, no rotation function.
      template.resourceCountIs('AWS::SecretsManager::RotationSchedule', 0);
      template.resourceCountIs('AWS::SecretsManager::ResourcePolicy', 0);
    }
  });

  it('tells every function where the sealing key is, and lets it read and decrypt that secret', () => {
    const secret = sealKeyId(t);
    const keyId = resources(t, 'AWS::KMS::Key')[0][0];
    for (const name of ['api', 'worker', 'notifier', 'sweeper']) {
      const env = t.toJSON().Resources[fnId(t, name)].Properties.Environment.Variables;
      assert.deepEqual(env.LONGRUN_SEAL_KEY_SECRET, { Ref: secret }, `${name} is told the secret's ARN`);
      const grants = grantsOf(t, name);
      assert.ok(can(grants, 'secretsmanager:GetSecretValue', secret), `${name} reads the sealing key`);
      assert.ok(can(grants, 'kms:Decrypt', keyId), `${name} decrypts it`);
    }
  });

  it('lets only the four functions read the sealing key, and nothing else do anything with it', () => {
    for (const template of [t, synth(hosted).t]) {
      const roles = [...principalsOn(template, sealKeyId(template))];
      const fnRoles = ['api', 'worker', 'notifier', 'sweeper'].map(
        (n) => template.toJSON().Resources[fnId(template, n)].Properties.Role['Fn::GetAtt'][0] as string,
      );
      assert.deepEqual(roles.map(([role]) => role).sort(), [...fnRoles].sort());
      for (const [role, actions] of roles) {
        assert.deepEqual([...actions], ['secretsmanager:GetSecretValue'], role);
      }
      // Nor may anything read every secret in the account.
      for (const [id, p] of resources(template, 'AWS::IAM::Policy')) {
        for (const s of (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement) {
          const secrets = [s.Action].flat().some((a) => a.startsWith('secretsmanager:') || a === '*');
          const wide = [s.Resource].flat().some((r) => r === '*' || /secret:\*/.test(JSON.stringify(r)));
          assert.ok(!(secrets && wide), `${id} grants Secrets Manager on every secret`);
        }
      }
    }
  });

  it('tells only the worker where the model key is', () => {
    for (const name of ['api', 'worker', 'notifier', 'sweeper']) {
      const env = t.toJSON().Resources[fnId(t, name)].Properties.Environment.Variables;
      assert.equal(env.LONGRUN_LLM_KEY_SECRET, name === 'worker' ? 'longrun/openai' : undefined, name);
    }
  });

  it('limits each user to 3 active runs by default and gives the worker the model limits', () => {
    for (const name of ['api', 'worker', 'notifier', 'sweeper']) {
      const env = t.toJSON().Resources[fnId(t, name)].Properties.Environment.Variables;
      assert.equal(env.LONGRUN_ACTIVE_LIMIT, '3', name);
    }
    const limits = 'openai:gpt-4.1-mini=concurrency:5,rpm:60';
    const { t: limited } = synth({ modelLimits: limits, activeRunLimit: 7 });
    for (const name of ['api', 'worker', 'notifier', 'sweeper']) {
      const env = limited.toJSON().Resources[fnId(limited, name)].Properties.Environment.Variables;
      assert.equal(env.LONGRUN_MODEL_LIMITS, name === 'worker' ? limits : undefined, name);
      assert.equal(env.LONGRUN_ACTIVE_LIMIT, '7', name);
    }
  });

  it('reserves concurrency for the sweeper and the notifier', () => {
    assert.equal(t.toJSON().Resources[fnId(t, 'sweeper')].Properties.ReservedConcurrentExecutions, 1);
    assert.ok(t.toJSON().Resources[fnId(t, 'notifier')].Properties.ReservedConcurrentExecutions > 0);
  });

  it('gives each function only the permissions its code uses', () => {
    const [api, worker, notifier, sweeper] = ['api', 'worker', 'notifier', 'sweeper'].map((n) =>
      grantsOf(t, n),
    );
    const stepQueue = resources(t, 'AWS::SQS::Queue').find(([, q]) =>
      String(q.Properties.QueueName).endsWith('-steps.fifo'),
    )![0];
    const topic = resources(t, 'AWS::SNS::Topic').find(([, q]) =>
      String(q.Properties.TopicName).endsWith('-outcomes'),
    )![0];
    for (const all of [api, worker, notifier, sweeper]) {
      const broad = all.filter((g) => g.action === '*' || g.action.endsWith(':*') || g.resource === '"*"');
      assert.deepEqual(broad, [], 'no service-wide or resource-wide grants');
      assert.ok(!can(all, 'dynamodb:Scan') && !can(all, 'dynamodb:DeleteTable'));
    }
    assert.ok(can(api, 'dynamodb:DeleteItem'), 'the API deletes schedules');
    assert.ok(!can(worker, 'dynamodb:DeleteItem'), 'the worker deletes nothing');
    const llmKey = (g: Grant) => g.action === 'secretsmanager:GetSecretValue' && g.resource.includes('secret:longrun/openai-');
    assert.ok(worker.some(llmKey), 'the worker reads the LLM key');
    for (const [name, all] of [['api', api], ['notifier', notifier], ['sweeper', sweeper]] as const) {
      assert.ok(!all.some(llmKey), `the ${name} never sees the LLM key`);
    }
    assert.ok(!can(notifier, 'sqs:SendMessage', stepQueue), 'the notifier cannot enqueue steps');
    assert.ok(!can(notifier, 'sns:Publish', topic), 'the notifier cannot publish outcomes');
    assert.ok(can(api, 'sqs:SendMessage', stepQueue) && can(sweeper, 'sns:Publish', topic));
    assert.ok(can(worker, 'sqs:DeleteMessage', stepQueue), 'the poller can delete handled steps');
    assert.ok(!can(api, 'sqs:ReceiveMessage'), 'the API cannot consume steps');
  });

  it('lets only the worker invoke exactly the configured Bedrock models', () => {
    const { t: tb } = synth({
      llm: {
        models: 'bedrock:anthropic.claude-haiku-4-5-20251001-v1:0, bedrock:global.amazon.nova-pro-v1:0',
      },
    });
    const [api, worker] = ['api', 'worker'].map((n) => grantsOf(tb, n));
    const invoke = worker.filter((g) => g.action === 'bedrock:InvokeModel').map((g) => g.resource);
    assert.equal(invoke.length, 3, invoke.join('\n'));
    assert.ok(invoke.some((r) => r.includes('foundation-model/anthropic.claude-haiku-4-5-20251001-v1:0')));
    assert.ok(invoke.some((r) => r.includes('foundation-model/amazon.nova-pro-v1:0')));
    assert.ok(invoke.some((r) => r.includes('inference-profile/global.amazon.nova-pro-v1:0')));
    assert.ok(!can(api, 'bedrock:InvokeModel'), 'the API never calls a model');
    assert.ok(!can(grantsOf(t, 'worker'), 'bedrock:InvokeModel'), 'no grant without a Bedrock model');
  });

  it('lets the API and the sweeper, which read runs by key in batches, batch-get items', () => {
    const [api, worker, sweeper] = ['api', 'worker', 'sweeper'].map((n) => grantsOf(t, n));
    assert.ok(can(api, 'dynamodb:BatchGetItem'));
    assert.ok(can(sweeper, 'dynamodb:BatchGetItem'));
    assert.ok(!can(worker, 'dynamodb:BatchGetItem'));
  });

  it('lets only the sweeper read the sweep index', () => {
    const json = JSON.stringify(t.toJSON().Resources);
    const policies = resources(t, 'AWS::IAM::Policy').filter(([, p]) =>
      JSON.stringify(p.Properties.PolicyDocument).includes('/index/GSI2'),
    );
    assert.ok(json.includes('/index/GSI2'));
    assert.equal(policies.length, 1);
    const roleId = (policies[0][1].Properties.Roles as { Ref: string }[])[0].Ref;
    assert.equal(t.toJSON().Resources[fnId(t, 'sweeper')].Properties.Role['Fn::GetAtt'][0], roleId);
  });

  it('runs the sweeper every minute with retries and a dead-letter queue', () => {
    t.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      State: 'ENABLED',
      Targets: [
        Match.objectLike({
          Arn: { 'Fn::GetAtt': [fnId(t, 'sweeper'), 'Arn'] },
          DeadLetterConfig: { Arn: Match.anyValue() },
          RetryPolicy: Match.objectLike({ MaximumRetryAttempts: 2 }),
        }),
      ],
    });
  });

  it('gives web_search to the worker alone: provider, key secret and read access to it', () => {
    const { t } = synth({ search: { provider: 'brave', keySecretName: 'longrun/brave' } });
    t.hasResourceProperties('AWS::Lambda::Function', {
      FunctionName: 'longrun-test-worker',
      Environment: { Variables: Match.objectLike({ LONGRUN_SEARCH: 'brave', LONGRUN_SEARCH_KEY_SECRET: 'longrun/brave' }) },
    });
    t.hasResourceProperties('AWS::Lambda::Function', {
      FunctionName: 'longrun-test-api',
      Environment: { Variables: Match.not(Match.objectLike({ LONGRUN_SEARCH: Match.anyValue() })) },
    });
    const grants = JSON.stringify(t.findResources('AWS::IAM::Policy'));
    assert.match(grants, /secret:longrun\/brave-\?\?\?\?\?\?/);
  });

  it('starts a run for each longrun.StartRun event through the sweeper', () => {
    t.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: { 'detail-type': ['longrun.StartRun'] },
      Targets: [
        Match.objectLike({
          Arn: { 'Fn::GetAtt': [fnId(t, 'sweeper'), 'Arn'] },
          DeadLetterConfig: { Arn: Match.anyValue() },
        }),
      ],
    });
  });

  it('alarms on dead letters, worker errors, old steps and throttles', () => {
    const alarms = resources(t, 'AWS::CloudWatch::Alarm').map(([, a]) => a.Properties);
    const named = (suffix: string) => alarms.find((a) => String(a.AlarmName).endsWith(suffix));
    assert.equal(named('DeadLetters')?.MetricName, 'ApproximateNumberOfMessagesVisible');
    assert.equal(named('DeadLetters')?.Threshold, 0);
    assert.equal(named('WorkerErrors')?.MetricName, 'Errors');
    assert.equal(named('OldestStep')?.MetricName, 'ApproximateAgeOfOldestMessage');
    assert.equal(named('WorkerThrottles')?.MetricName, 'Throttles');
    assert.ok(named('TableThrottles')?.Metrics, 'table throttles are a math expression');
    for (const a of alarms) assert.equal(a.AlarmActions, undefined, 'no alarm topic unless asked');
  });

  it('sends alarms to an email topic when one is given', () => {
    const { t: withEmail } = synth({ alarmEmail: 'ops@example.com' });
    withEmail.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'ops@example.com',
    });
    for (const [, a] of resources(withEmail, 'AWS::CloudWatch::Alarm')) {
      assert.equal((a.Properties.AlarmActions as unknown[]).length, 1);
    }
  });

  it('creates a Cognito user pool when no issuer is given, and none when one is', () => {
    t.resourceCountIs('AWS::Cognito::UserPool', 1);
    const { t: external } = synth({
      jwt: { issuer: 'https://login.example.com/', audience: ['console'] },
    });
    external.resourceCountIs('AWS::Cognito::UserPool', 0);
    external.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
      JwtConfiguration: { Audience: ['console'], Issuer: 'https://login.example.com/' },
    });
  });

  it('outputs the API URL, table name, queue URL and topic ARN', () => {
    for (const out of ['ApiUrl', 'TableName', 'QueueUrl', 'TopicArn']) t.hasOutput(out, {});
  });

  it('keeps production data when the stack is deleted', () => {
    const { t: prod } = synth({ stage: 'prod' });
    prod.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      Properties: Match.objectLike({ DeletionProtectionEnabled: true }),
    });
  });
});

describe('the hosted console', () => {
  const { t } = synth(hosted);
  const json = (v: unknown) => JSON.stringify(v);
  const distributionId = () => resources(t, 'AWS::CloudFront::Distribution')[0][0];

  it('serves the console from a private bucket that only CloudFront reads', () => {
    const files = resources(t, 'AWS::S3::Bucket').filter(([, b]) => b.Properties.VersioningConfiguration);
    assert.equal(files.length, 1);
    assert.deepEqual(files[0][1].Properties.PublicAccessBlockConfiguration, {
      BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true,
    });
    t.resourceCountIs('AWS::CloudFront::OriginAccessControl', 1);
    t.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({
        Action: 's3:GetObject', Principal: { Service: 'cloudfront.amazonaws.com' },
      })]) },
    });
  });

  it('answers deep links with the app over HTTPS only', () => {
    t.hasResourceProperties('AWS::CloudFront::Distribution', {
      DistributionConfig: Match.objectLike({
        DefaultRootObject: 'index.html',
        DefaultCacheBehavior: Match.objectLike({ ViewerProtocolPolicy: 'redirect-to-https' }),
        CustomErrorResponses: [
          { ErrorCode: 403, ResponseCode: 200, ResponsePagePath: '/index.html', ErrorCachingMinTTL: 0 },
          { ErrorCode: 404, ResponseCode: 200, ResponsePagePath: '/index.html', ErrorCachingMinTTL: 0 },
        ],
      }),
    });
  });

  it('sends a CSP that lets the page reach only this API and the sign-in provider', () => {
    const [[, policy]] = resources(t, 'AWS::CloudFront::ResponseHeadersPolicy');
    const csp = json(policy.Properties);
    assert.match(csp, /script-src 'self'/);
    assert.match(csp, /connect-src 'self' https:\/\/\*\.execute-api\.eu-west-1\.amazonaws\.com https:\/\/cognito-idp\.eu-west-1\.amazonaws\.com https:\/\/\*\.auth\.eu-west-1\.amazoncognito\.com/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.match(csp, /StrictTransportSecurity/);
  });

  it('uploads a config.json pointing at this API and the user pool client, long-polling', () => {
    const [[, upload]] = resources(t, 'Custom::CDKBucketDeployment');
    const props = json(upload.Properties);
    const apiId = resources(t, 'AWS::ApiGatewayV2::Api')[0][0];
    const clientId = resources(t, 'AWS::Cognito::UserPoolClient')[0][0];
    assert.ok(props.includes(apiId), 'config.json carries the API URL');
    assert.ok(props.includes(clientId), 'config.json carries the OIDC client id');
    assert.deepEqual(upload.Properties.DistributionPaths, ['/index.html', '/config.json']);
  });

  it('uses the console URL for deep links, CORS and the sign-in callback', () => {
    const cdn = distributionId();
    const worker = t.toJSON().Resources[fnId(t, 'worker')];
    assert.ok(json(worker.Properties.Environment.Variables.LONGRUN_APP_BASE_URL).includes(cdn));
    const [[, api]] = resources(t, 'AWS::ApiGatewayV2::Api');
    assert.ok(json((api.Properties.CorsConfiguration as { AllowOrigins: unknown }).AllowOrigins).includes(cdn));
    const [[, client]] = resources(t, 'AWS::Cognito::UserPoolClient');
    const callback = json(client.Properties.CallbackURLs);
    assert.ok(callback.includes(cdn) && callback.includes('/callback'), callback);
    assert.deepEqual(client.Properties.AllowedOAuthFlows, ['code']);
    t.resourceCountIs('AWS::Cognito::UserPoolDomain', 1);
    t.hasOutput('ConsoleUrl', {});
  });

  it('refuses to host the console for an external issuer without a client id', () => {
    assert.throws(
      () => synth({ ...hosted, jwt: { issuer: 'https://login.example.com/', audience: [] } }),
      /jwtAudience/,
    );
  });
});

/** Synthesizes with both nag packs; returns every violation left unacknowledged. */
function nagViolations(extra?: (stack: LongrunStack) => void): string[] {
  const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'longrun-nag-'));
  const app = new App({ outdir });
  const stack = new LongrunStack(app, 'longrun-nag', props({ alarmEmail: 'ops@example.com', ...hosted }));
  extra?.(stack);
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
  try {
    app.synth();
  } catch {
    // A failing validation throws after writing its report, which is what we read.
  }
  const report = JSON.parse(fs.readFileSync(path.join(outdir, 'validation-report.json'), 'utf8'));
  return report.pluginReports.flatMap(
    (p: { violations: { ruleName: string; violatingConstructs: { constructPath: string }[] }[] }) =>
      p.violations.map((v) => `${v.ruleName} at ${v.violatingConstructs.map((c) => c.constructPath)}`),
  );
}

describe('cdk-nag', () => {
  it('finds nothing unexplained under AwsSolutions and Serverless checks', () => {
    assert.deepEqual(nagViolations(), []);
  });

  it('reports a resource that breaks the rules, so a clean report means something', () => {
    const violations = nagViolations((stack) => {
      new sqs.Queue(stack, 'Careless', { encryption: sqs.QueueEncryption.UNENCRYPTED });
    });
    assert.ok(violations.some((v) => v.startsWith('AwsSolutions-SQS4 at longrun-nag/Careless')), `${violations}`);
    assert.ok(violations.some((v) => v.startsWith('Serverless-SQSRedrivePolicy at longrun-nag/Careless')));
  });
});

describe('cdk.json', () => {
  it('keeps synth off the network: no telemetry, no notices, no version reporting', () => {
    const cdk = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'cdk.json'), 'utf8'));
    assert.equal(cdk.notices, false);
    assert.equal(cdk.versionReporting, false);
    assert.equal(cdk['cli-telemetry'], false);
  });
});
