import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import queue from '../terraform/queue.json';

import {
  CfnOutput,
  CfnResource,
  Duration,
  RemovalPolicy,
  Stack,
  Validations,
} from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpJwtAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as cognito from 'aws-cdk-lib/aws-cognito';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsDestination } from 'aws-cdk-lib/aws-lambda-destinations';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subs from 'aws-cdk-lib/aws-sns-subscriptions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

import { checkovSkip } from './checks';
import { ConsoleSite, signInOrigins } from './console';

/** The four Lambda binaries, as `cargo lambda build` names their output folders. */
export const FUNCTIONS = ['api', 'worker', 'notifier', 'sweeper'] as const;
export type FunctionName = (typeof FUNCTIONS)[number];

/** Statuses the notifier is subscribed to: the outcomes a user hears about. */
export const NOTIFIED_STATUSES = ['completed', 'stopped', 'canceled', 'failed', 'waiting_on_user'];

export interface JwtSettings {
  /** The OIDC issuer URL, e.g. `https://login.example.com/`. */
  readonly issuer: string;
  /** Accepted `aud` values (client ids). */
  readonly audience: string[];
}

export interface LlmSettings {
  /** `LONGRUN_MODELS`: comma-separated `provider:model`, the first is the default. */
  readonly models: string;
  /** An OpenAI-compatible base URL, when not OpenAI itself. */
  readonly openaiBaseUrl?: string;
  /** Name of a Secrets Manager secret whose string is the provider's API key. */
  readonly apiKeySecretName?: string;
}

export interface SearchSettings {
  /** `LONGRUN_SEARCH`: the `web_search` tool's provider. */
  readonly provider: 'tavily' | 'brave' | 'exa';
  /** Name of a Secrets Manager secret whose string is the provider's key; only the worker reads it. */
  readonly keySecretName: string;
}

export interface LongrunServiceProps {
  /** `dev`, `prod`, …: part of every resource name, and `prod` keeps data on delete. */
  readonly stage: string;
  /** Where the web console lives; deep links, sign-in redirects and CORS use it. Defaults to
   *  the CloudFront URL of the console this stack hosts (`consoleDir`). */
  readonly appBaseUrl?: string;
  /** The console's build (web/dist): hosted on S3 + CloudFront, pointed at this API. */
  readonly consoleDir?: string;
  /** An existing identity provider; without one the stack creates a Cognito user pool. */
  readonly jwt?: JwtSettings;
  readonly llm: LlmSettings;
  /** The agent's `web_search` tool; without it runs have no web search. */
  readonly search?: SearchSettings;
  /** The four functions' code: `FunctionAssets.fromBuild(dir)` for the `make package` output,
   *  or `FunctionAssets.stubs()` to synthesize (tests, diffs, CI) before anything is built.
   *  Give this or `assetsDir`. */
  readonly assets?: FunctionAssets;
  /** Shorthand for `assets: FunctionAssets.fromBuild(assetsDir)`: a folder holding
   *  `{api,worker,notifier,sweeper}/bootstrap.zip` (`make package`) or `…/bootstrap`. */
  readonly assetsDir?: string;
  /** Email address for alarm notifications; no alarm topic without it. */
  readonly alarmEmail?: string;
  /** Upper bound of concurrent worker invocations; with the batch of 10, about ten times as
   *  many iterations are in flight. Default 100. */
  readonly workerMaxConcurrency?: number;
  /** Runs one user may have active at once. Default 3. */
  readonly activeRunLimit?: number;
  /** An HTTP API of yours to mount longrun on (`ANY /v1/{proxy+}`, `POST /mcp`, behind a JWT
   *  authorizer for `jwt`); without one the service creates its own, with access logs and
   *  throttling. */
  readonly httpApi?: apigw.IHttpApi;
  /** Per-model capacity of ONE worker environment, `MODEL=concurrency:N,rpm:N,tpm:N;…`
   *  (`LONGRUN_MODEL_LIMITS`): a provider quota divided by `workerMaxConcurrency`. */
  readonly modelLimits?: string;
}

/** The worker's timeout bounds one iteration: LLM calls, tools and the commit. */
export const WORKER_TIMEOUT = Duration.seconds(150);
/** AWS's guidance for SQS event sources: at least six times the function timeout. */
export const STEP_VISIBILITY = Duration.seconds(WORKER_TIMEOUT.toSeconds() * 6);
/** The dead-letter threshold every deployment shares (infra/terraform/queue.json: the Terraform module's, read by serve too). */
export const MAX_RECEIVES: number = queue.max_receives;

export { checkovSkip } from './checks';

/** Accepts a cdk-nag finding on a construct; the reason is the review. */
function accept(construct: Construct, id: string, reason: string): void {
  Validations.of(construct).acknowledge({ id, reason });
}

function cfn(construct: Construct): CfnResource {
  return construct.node.defaultChild as CfnResource;
}

/**
 * longrun as a construct to put in any stack: DynamoDB table, SQS FIFO step queue with its
 * DLQ, SNS outcome topic, the secret holding the key that seals registered secrets in the
 * table, HTTP API behind a JWT authorizer (with `/v1` and `/mcp`), the four functions with a
 * role each, the sweeper's schedule, the `longrun.StartRun` event rule and the
 * alarms that say when a run is in trouble. Everything is exposed for wiring more: subscribe
 * your own consumer to `topic` (messages carry a `status` attribute to filter on), read
 * `table`, grant on `functions`.
 */
export class LongrunService extends Construct {
  readonly table: dynamodb.Table;
  readonly stepQueue: sqs.Queue;
  readonly deadLetters: sqs.Queue;
  readonly topic: sns.Topic;
  /** The secret holding the key that seals registered secrets in the table
   *  (`LONGRUN_SEAL_KEY_SECRET`); only the four functions may read it. */
  readonly sealKey: secretsmanager.Secret;
  readonly api: apigw.IHttpApi;
  readonly functions: Record<FunctionName, lambda.Function>;
  readonly alarms: cloudwatch.Alarm[] = [];

  /** The rule that starts a run for each `longrun.StartRun` event on the default bus. */
  readonly startRunRule: events.Rule;
  readonly stage: string;

  constructor(scope: Construct, id: string, props: LongrunServiceProps) {
    super(scope, id);
    const stack = Stack.of(this);
    this.stage = props.stage;
    const prod = props.stage === 'prod';
    const name = (s: string) => `longrun-${props.stage}-${s}`;
    if (props.assets && props.assetsDir !== undefined) {
      throw new Error('LongrunService: give assets or assetsDir, not both');
    }
    const assets = props.assets ?? (props.assetsDir !== undefined ? FunctionAssets.fromBuild(props.assetsDir) : undefined);
    if (!assets) {
      throw new Error('LongrunService: assets is required: FunctionAssets.fromBuild(dir) with the '
        + '`make package` output (target/lambda), or FunctionAssets.stubs() to synthesize without built functions');
    }

    const site = props.consoleDir
      ? new ConsoleSite(this, 'Console', {
          stage: props.stage,
          prod,
          dir: props.consoleDir,
          connectSrc: [
            `https://*.execute-api.${stack.region}.amazonaws.com`,
            ...signInOrigins(stack, props.jwt?.issuer ?? '', !props.jwt),
          ],
        })
      : undefined;
    const appBaseUrl = props.appBaseUrl ?? site?.url;
    if (!appBaseUrl) throw new Error('appBaseUrl is required when the stack does not host the console');
    // A literal URL may carry a path; the hosted console is always at its origin.
    const origin = props.appBaseUrl ? new URL(props.appBaseUrl).origin : appBaseUrl;

    const key = new kms.Key(this, 'Key', {
      description: 'longrun: table, queues, topic, logs and function environments',
      enableKeyRotation: true,
      removalPolicy: prod ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });
    // Services that write into the encrypted log groups and queues on our behalf.
    for (const service of [`logs.${stack.region}.amazonaws.com`, 'events.amazonaws.com',
      'sns.amazonaws.com', 'cloudwatch.amazonaws.com']) {
      key.grantEncryptDecrypt(new iam.ServicePrincipal(service));
    }

    this.table = new dynamodb.Table(this, 'Table', {
      tableName: name('runs'),
      partitionKey: { name: 'PK', type: dynamodb.AttributeType.STRING },
      sortKey: { name: 'SK', type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED,
      encryptionKey: key,
      timeToLiveAttribute: 'expires_at',
      deletionProtection: prod,
      removalPolicy: prod ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });
    // GSI1: a user's runs, newest first, with their status (runs are then read by key, so
    // the index is not rewritten on every write of a run). GSI2 (sparse): runs owing a step or
    // an outcome, by their last write rounded down to 5 minutes, and schedules and pending
    // webhook deliveries (their body) by when they are due; only the sweeper reads it. Keep in
    // step with
    // shared/aws/src/dynamodb.rs `INDEXES`.
    const indexes: [string, string][] = [
      ['GSI1', 'status'],
      ['GSI2', 'body'],
    ];
    for (const [gsi, projected] of indexes) {
      this.table.addGlobalSecondaryIndex({
        indexName: gsi,
        partitionKey: { name: `${gsi}PK`, type: dynamodb.AttributeType.STRING },
        sortKey: { name: `${gsi}SK`, type: dynamodb.AttributeType.STRING },
        projectionType: dynamodb.ProjectionType.INCLUDE,
        nonKeyAttributes: [projected],
      });
    }

    this.deadLetters = new sqs.Queue(this, 'StepDeadLetters', {
      queueName: `${name('steps-dlq')}.fifo`,
      fifo: true,
      retentionPeriod: Duration.days(14),
      encryption: sqs.QueueEncryption.KMS,
      encryptionMasterKey: key,
      enforceSSL: true,
    });
    accept(this.deadLetters, 'Serverless-SQSRedrivePolicy', 'It is the step queue\'s DLQ.');
    this.stepQueue = new sqs.Queue(this, 'StepQueue', {
      queueName: `${name('steps')}.fifo`,
      fifo: true,
      // Every message carries its own `{run_id}#{n}` deduplication id.
      contentBasedDeduplication: false,
      // High-throughput FIFO: dedup ids are unique within a run's group, and each run (message
      // group) has its own throughput, so the queue is not held to ~300 sends/s in all.
      deduplicationScope: sqs.DeduplicationScope.MESSAGE_GROUP,
      fifoThroughputLimit: sqs.FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
      visibilityTimeout: STEP_VISIBILITY,
      retentionPeriod: Duration.days(4),
      deadLetterQueue: { queue: this.deadLetters, maxReceiveCount: MAX_RECEIVES },
      encryption: sqs.QueueEncryption.KMS,
      encryptionMasterKey: key,
      enforceSSL: true,
    });

    this.topic = new sns.Topic(this, 'Outcomes', {
      topicName: name('outcomes'),
      masterKey: key,
      enforceSSL: true,
    });

    // Async invocations (SNS → notifier, EventBridge → sweeper) that fail for good land here.
    const failed = new sqs.Queue(this, 'FailedInvocations', {
      queueName: name('failed-invocations'),
      retentionPeriod: Duration.days(14),
      encryption: sqs.QueueEncryption.KMS,
      encryptionMasterKey: key,
      enforceSSL: true,
    });
    const dlqReason = 'It is the DLQ of the notifier subscription, the sweeper target and the '
      + 'async functions\' failure destination.';
    accept(failed, 'AwsSolutions-SQS3', dlqReason);
    accept(failed, 'Serverless-SQSRedrivePolicy', dlqReason);

    // The key that seals the tool, MCP and webhook secrets users register, in the table; every
    // function reads it at cold start. Retained on delete: without it no sealed value in the
    // table (or a backup of it) can be opened again.
    this.sealKey = new secretsmanager.Secret(this, 'SealKey', {
      secretName: name('seal-key'),
      description: 'longrun: the key that seals registered tool, MCP and webhook secrets in the table',
      generateSecretString: { passwordLength: 64, excludePunctuation: true, includeSpace: false },
      encryptionKey: key,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    // checkov has no rotation check for CloudFormation (CKV2_AWS_57 is Terraform's, skipped
    // in ../terraform/main.tf for the same reason).
    accept(this.sealKey, 'AwsSolutions-SMG4', 'Rotating the sealing key would leave every value '
      + 'sealed with the old one unreadable; it changes only together with a re-seal of the table.');

    const llmEnv: Record<string, string> = { LONGRUN_MODELS: props.llm.models };
    if (props.llm.openaiBaseUrl) llmEnv.OPENAI_BASE_URL = props.llm.openaiBaseUrl;
    // Only the worker calls the model, so only it learns where the key is (and may read it).
    const workerEnv: Record<string, string> = {};
    if (props.llm.apiKeySecretName) workerEnv.LONGRUN_LLM_KEY_SECRET = props.llm.apiKeySecretName;
    if (props.modelLimits) workerEnv.LONGRUN_MODEL_LIMITS = props.modelLimits;
    if (props.search) {
      workerEnv.LONGRUN_SEARCH = props.search.provider;
      workerEnv.LONGRUN_SEARCH_KEY_SECRET = props.search.keySecretName;
    }
    const common: Record<string, string> = {
      ...llmEnv,
      LONGRUN_TABLE: this.table.tableName,
      LONGRUN_QUEUE_URL: this.stepQueue.queueUrl,
      LONGRUN_TOPIC_ARN: this.topic.topicArn,
      LONGRUN_SEAL_KEY_SECRET: this.sealKey.secretArn,
      LONGRUN_APP_BASE_URL: appBaseUrl,
      LONGRUN_ACTIVE_LIMIT: String(props.activeRunLimit ?? 3),
      RUST_LOG: 'info',
    };

    const fn = (
      fname: FunctionName,
      opts: {
        memory: number;
        timeout: Duration;
        reserved?: number;
        async?: boolean;
        environment?: Record<string, string>;
      },
    ): lambda.Function => {
      const logGroup = new logs.LogGroup(this, `${fname}Logs`, {
        logGroupName: `/aws/lambda/${name(fname)}`,
        retention: prod ? logs.RetentionDays.THREE_MONTHS : logs.RetentionDays.ONE_MONTH,
        encryptionKey: key,
        removalPolicy: RemovalPolicy.DESTROY,
      });
      // A role per function with only its own log group: no managed policy, no shared grants.
      const role = new iam.Role(this, `${fname}Role`, {
        assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
        description: `longrun ${fname} function`,
      });
      role.addToPolicy(
        new iam.PolicyStatement({
          actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
          resources: [logGroup.logGroupArn, `${logGroup.logGroupArn}:log-stream:*`],
        }),
      );
      const logGroupId = stack.getLogicalId(logGroup.node.defaultChild as CfnResource);
      accept(role, `AwsSolutions-IAM5[Resource::<${logGroupId}.Arn>:log-stream:*]`,
        'Lambda names a log stream per execution environment; scoped to this function\'s group.');
      const f = new lambda.Function(this, fname, {
        functionName: name(fname),
        runtime: lambda.Runtime.PROVIDED_AL2023,
        architecture: lambda.Architecture.ARM_64,
        handler: 'bootstrap',
        code: assets.code(fname),
        memorySize: opts.memory,
        timeout: opts.timeout,
        role,
        logGroup,
        loggingFormat: lambda.LoggingFormat.JSON,
        environment: { ...common, ...opts.environment },
        environmentEncryption: key,
        reservedConcurrentExecutions: opts.reserved,
        ...(opts.async ? { onFailure: new SqsDestination(failed), retryAttempts: 2 } : {}),
      });
      const skips: Parameters<typeof checkovSkip>[1][] = [
        {
          id: 'CKV_AWS_117',
          comment: 'No VPC resources to reach; a VPC would add NAT cost to every LLM call.',
        },
        {
          id: 'CKV_AWS_50',
          comment: 'Tracing is off: traces cost per iteration; EMF metrics and JSON logs carry run_id.',
        },
      ];
      if (opts.reserved === undefined) {
        skips.push({
          id: 'CKV_AWS_115',
          comment: 'Bounded by its trigger (API Gateway throttling or the SQS maximum concurrency).',
        });
      }
      const noDlq = opts.async
        ? 'Failed async invocations go to an on-failure destination, which keeps more context.'
        : 'Invoked synchronously (API Gateway, SQS poller): a DLQ never receives anything.';
      skips.push({ id: 'CKV_AWS_116', comment: noDlq });
      checkovSkip(cfn(f), ...skips);
      accept(f, 'Serverless-LambdaTracing',
        'Tracing is off: traces cost per iteration; EMF metrics and JSON logs carry run_id.');
      accept(f, 'Serverless-LambdaDLQ', noDlq);
      if (opts.async) {
        for (const action of ['kms:GenerateDataKey*', 'kms:ReEncrypt*']) {
          accept(role, `AwsSolutions-IAM5[Action::${action}]`,
            'CDK\'s grant for sending to the encrypted failure queue; limited to the one key.');
        }
      }
      return f;
    };

    const workerMax = props.workerMaxConcurrency ?? 100;
    this.functions = {
      api: fn('api', { memory: 256, timeout: Duration.seconds(29) }),
      worker: fn('worker', { memory: 256, timeout: WORKER_TIMEOUT, environment: workerEnv }),
      notifier: fn('notifier', { memory: 256, timeout: Duration.seconds(60), async: true,
        reserved: 5 }),
      // One sweep at a time: two would only race to republish the same steps.
      sweeper: fn('sweeper', { memory: 256, timeout: Duration.seconds(60), async: true,
        reserved: 1, environment: {
          LONGRUN_SWEEP_STALE_MS: String((STEP_VISIBILITY.toSeconds() + 60) * 1000),
        } }),
    };
    const { api, worker, notifier, sweeper } = this.functions;

    // Least privilege, per function: the item actions each one's code issues, nothing else.
    const tableArns = [this.table.tableArn, `${this.table.tableArn}/index/GSI1`];
    const ddb = (f: lambda.Function, actions: string[], extra: string[] = []) => {
      f.addToRolePolicy(
        new iam.PolicyStatement({
          actions: actions.map((a) => `dynamodb:${a}`),
          resources: [...tableArns, ...extra],
        }),
      );
    };
    const rw = ['GetItem', 'PutItem', 'UpdateItem', 'Query', 'ConditionCheckItem'];
    // BatchGetItem: listing a user's runs and the sweeper's candidates read runs by key.
    ddb(api, [...rw, 'DeleteItem', 'BatchGetItem']);
    ddb(worker, rw);
    ddb(notifier, rw);
    ddb(sweeper, [...rw, 'BatchGetItem'], [`${this.table.tableArn}/index/GSI2`]);
    const keyUse = (f: lambda.Function, actions: string[]) =>
      f.addToRolePolicy(new iam.PolicyStatement({ actions, resources: [key.keyArn] }));
    for (const f of [api, worker, notifier, sweeper]) {
      keyUse(f, ['kms:Decrypt', 'kms:GenerateDataKey']);
      // The one call AwsSettings::from_env makes; kms:Decrypt on the secret's key is above.
      f.addToRolePolicy(new iam.PolicyStatement({
        actions: ['secretsmanager:GetSecretValue'],
        resources: [this.sealKey.secretArn],
      }));
    }
    for (const f of [api, worker, sweeper]) {
      f.addToRolePolicy(
        new iam.PolicyStatement({ actions: ['sqs:SendMessage'], resources: [this.stepQueue.queueArn] }),
      );
      f.addToRolePolicy(
        new iam.PolicyStatement({ actions: ['sns:Publish'], resources: [this.topic.topicArn] }),
      );
    }
    if (props.llm.apiKeySecretName) {
      secretsmanager.Secret.fromSecretNameV2(this, 'LlmKey', props.llm.apiKeySecretName)
        .grantRead(worker);
    }
    if (props.search) {
      secretsmanager.Secret.fromSecretNameV2(this, 'SearchKey', props.search.keySecretName)
        .grantRead(worker);
    }
    // Bedrock models are called with the worker's own role: InvokeModel on exactly the
    // configured models (and, for a cross-Region inference profile, the profile itself).
    const bedrock = props.llm.models
      .split(',')
      .map((m) => m.trim())
      .filter((m) => m.startsWith('bedrock:'))
      .map((m) => m.slice('bedrock:'.length));
    if (bedrock.length > 0) {
      const profile = /^(us|eu|apac|global|jp|au|ca)\./;
      worker.addToRolePolicy(new iam.PolicyStatement({
        actions: ['bedrock:InvokeModel'],
        resources: bedrock.flatMap((id) => {
          const base = id.replace(profile, '');
          const model = `arn:${stack.partition}:bedrock:*::foundation-model/${base}`;
          return profile.test(id)
            ? [model, `arn:${stack.partition}:bedrock:${stack.region}:${stack.account}:inference-profile/${id}`]
            : [model];
        }),
      }));
    }

    worker.addEventSource(
      new SqsEventSource(this.stepQueue, {
        batchSize: 10,
        reportBatchItemFailures: true,
        maxConcurrency: workerMax,
      }),
    );
    accept(worker, 'Serverless-LambdaEventSourceMappingDestination',
      'SQS sources do not take one: a step that fails every delivery goes to the queue\'s DLQ.');
    this.topic.addSubscription(
      new subs.LambdaSubscription(notifier, {
        filterPolicy: {
          status: sns.SubscriptionFilter.stringFilter({ allowlist: NOTIFIED_STATUSES }),
        },
        deadLetterQueue: failed,
      }),
    );
    new events.Rule(this, 'SweepSchedule', {
      ruleName: name('sweep'),
      description: 'Recovers stalled runs, republishes missed outcomes, starts due schedules',
      schedule: events.Schedule.rate(Duration.minutes(1)),
      targets: [
        new targets.LambdaFunction(sweeper, {
          deadLetterQueue: failed,
          retryAttempts: 2,
          maxEventAge: Duration.minutes(2),
        }),
      ],
    });

    // Runs started by events: an app puts `longrun.StartRun` on the default bus (or an
    // EventBridge Scheduler target sends one); the sweeper starts the run once per event id.
    this.startRunRule = new events.Rule(this, 'StartRunEvents', {
      ruleName: name('start-run'),
      description: 'Starts a run for each longrun.StartRun event',
      eventPattern: { detailType: ['longrun.StartRun'] },
      targets: [
        new targets.LambdaFunction(sweeper, {
          deadLetterQueue: failed,
          retryAttempts: 2,
          maxEventAge: Duration.hours(1),
        }),
      ],
    });

    // Identity: the caller's issuer, or a user pool made here.
    let jwt = props.jwt;
    if (!jwt) {
      const pool = new cognito.UserPool(this, 'Users', {
        userPoolName: name('users'),
        selfSignUpEnabled: false,
        signInAliases: { email: true },
        mfa: cognito.Mfa.REQUIRED,
        mfaSecondFactor: { sms: false, otp: true },
        passwordPolicy: {
          minLength: 12,
          requireDigits: true,
          requireLowercase: true,
          requireUppercase: true,
          requireSymbols: true,
        },
        featurePlan: cognito.FeaturePlan.PLUS,
        standardThreatProtectionMode: cognito.StandardThreatProtectionMode.FULL_FUNCTION,
        removalPolicy: prod ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
      });
      const client = pool.addClient('Console', {
        generateSecret: false,
        authFlows: { userSrp: true },
        oAuth: {
          flows: { authorizationCodeGrant: true },
          scopes: [cognito.OAuthScope.OPENID, cognito.OAuthScope.EMAIL],
          // The console finishes the code + PKCE flow on /callback.
          callbackUrls: [`${origin}/callback`],
          logoutUrls: [appBaseUrl],
        },
      });
      // Cognito's hosted sign-in page, which the console's authorization request goes to.
      pool.addDomain('SignIn', { cognitoDomain: { domainPrefix: name(stack.account) } });
      jwt = {
        issuer: `https://cognito-idp.${stack.region}.amazonaws.com/${pool.userPoolId}`,
        audience: [client.userPoolClientId],
      };
      new CfnOutput(this, 'UserPoolId', { value: pool.userPoolId });
      new CfnOutput(this, 'UserPoolClientId', { value: client.userPoolClientId });
    }

    const authorizer = new HttpJwtAuthorizer('Jwt', jwt.issuer, { jwtAudience: jwt.audience });
    const integration = new HttpLambdaIntegration('ApiIntegration', api);
    if (props.httpApi) {
      // Mounted on the caller's API: its stage, access logs, throttling and CORS stay the caller's.
      this.api = props.httpApi;
      const mount: [string, string, apigw.HttpMethod][] = [
        ['V1Route', '/v1/{proxy+}', apigw.HttpMethod.ANY],
        ['McpRoute', '/mcp', apigw.HttpMethod.POST],
      ];
      for (const [rid, routePath, method] of mount) {
        new apigw.HttpRoute(this, rid, {
          httpApi: props.httpApi,
          routeKey: apigw.HttpRouteKey.with(routePath, method),
          integration,
          authorizer,
        });
      }
    } else {
      const own = new apigw.HttpApi(this, 'Api', {
        apiName: name('api'),
        description: 'longrun HTTP API',
        defaultAuthorizer: authorizer,
        corsPreflight: {
          allowOrigins: [origin],
          allowHeaders: ['authorization', 'content-type', 'last-event-id'],
          allowMethods: [
            apigw.CorsHttpMethod.GET,
            apigw.CorsHttpMethod.POST,
            apigw.CorsHttpMethod.PUT,
            apigw.CorsHttpMethod.PATCH,
            apigw.CorsHttpMethod.DELETE,
          ],
          maxAge: Duration.hours(1),
        },
      });
      this.api = own;
      own.addRoutes({ path: '/v1/{proxy+}', methods: [apigw.HttpMethod.ANY], integration });
      // The MCP server (JSON-RPC over POST), behind the same JWT authorizer as /v1.
      own.addRoutes({ path: '/mcp', methods: [apigw.HttpMethod.POST], integration });
      for (const health of own.addRoutes({
        path: '/healthz',
        methods: [apigw.HttpMethod.GET],
        integration,
        authorizer: new apigw.HttpNoneAuthorizer(),
      })) {
        accept(health, 'AwsSolutions-APIG4',
          'The health check answers without auth for load balancers and uptime probes; it reads nothing.');
      }
      const accessLogs = new logs.LogGroup(this, 'ApiAccessLogs', {
        logGroupName: `/aws/apigateway/${name('api')}`,
        retention: prod ? logs.RetentionDays.THREE_MONTHS : logs.RetentionDays.ONE_MONTH,
        encryptionKey: key,
        removalPolicy: RemovalPolicy.DESTROY,
      });
      const stage = own.defaultStage?.node.defaultChild as apigw.CfnStage;
      stage.accessLogSettings = {
        destinationArn: accessLogs.logGroupArn,
        format: JSON.stringify({
          requestId: '$context.requestId',
          ip: '$context.identity.sourceIp',
          user: '$context.authorizer.claims.sub',
          method: '$context.httpMethod',
          path: '$context.path',
          status: '$context.status',
          latencyMs: '$context.responseLatency',
          error: '$context.error.message',
          authorizerError: '$context.authorizer.error',
        }),
      };
      stage.defaultRouteSettings = { throttlingBurstLimit: 200, throttlingRateLimit: 100 };
    }

    this.addAlarms(props, key, failed);

    if (site) {
      const [clientId] = jwt.audience;
      if (!clientId) throw new Error('hosting the console needs jwtAudience: the OIDC client id it signs in with');
      site.deploy({
        apiUrl: this.api.apiEndpoint,
        auth: { mode: 'oidc', issuer: jwt.issuer, clientId, scopes: 'openid email', tokenType: 'access_token' },
        live: 'poll',
      });
      new CfnOutput(this, 'ConsoleUrl', { value: site.url, description: 'The web console' });
    }

    new CfnOutput(this, 'ApiUrl', { value: this.api.apiEndpoint, description: 'LONGRUN_API_URL' });
    new CfnOutput(this, 'TableName', { value: this.table.tableName });
    new CfnOutput(this, 'QueueUrl', { value: this.stepQueue.queueUrl });
    new CfnOutput(this, 'TopicArn', { value: this.topic.topicArn });
  }

  private addAlarms(props: LongrunServiceProps, key: kms.IKey, failed: sqs.IQueue): void {
    const alarm = (id: string, metric: cloudwatch.IMetric, threshold: number, what: string) => {
      const a = new cloudwatch.Alarm(this, id, {
        alarmName: `longrun-${props.stage}-${id}`,
        alarmDescription: what,
        metric,
        threshold,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
      this.alarms.push(a);
    };
    const five = Duration.minutes(5);
    alarm(
      'DeadLetters',
      this.deadLetters.metricApproximateNumberOfMessagesVisible({ period: five, statistic: 'Maximum' }),
      0,
      'A step message failed every delivery: a run is stuck until someone looks.',
    );
    alarm(
      'WorkerErrors',
      this.functions.worker.metricErrors({ period: five, statistic: 'Sum' }),
      0,
      'The worker failed invocations (panics, time-outs).',
    );
    alarm(
      'OldestStep',
      this.stepQueue.metricApproximateAgeOfOldestMessage({ period: five, statistic: 'Maximum' }),
      STEP_VISIBILITY.toSeconds(),
      'A step has waited longer than one visibility timeout: workers are not keeping up.',
    );
    alarm(
      'WorkerThrottles',
      this.functions.worker.metricThrottles({ period: five, statistic: 'Sum' }),
      0,
      'Worker invocations were throttled (account concurrency).',
    );
    alarm(
      'TableThrottles',
      new cloudwatch.MathExpression({
        expression: 'r + w',
        usingMetrics: {
          r: this.table.metric('ReadThrottleEvents', { period: five, statistic: 'Sum' }),
          w: this.table.metric('WriteThrottleEvents', { period: five, statistic: 'Sum' }),
        },
        period: five,
      }),
      0,
      'DynamoDB throttled reads or writes.',
    );
    if (props.alarmEmail) {
      const topic = new sns.Topic(this, 'Alarms', {
        topicName: `longrun-${props.stage}-alarms`,
        masterKey: key,
        enforceSSL: true,
      });
      topic.addSubscription(
        new subs.EmailSubscription(props.alarmEmail, { deadLetterQueue: failed }),
      );
      for (const a of this.alarms) a.addAlarmAction(new SnsAction(topic));
    }
  }
}

/**
 * Where the four functions' code comes from. `fromBuild` takes the `cargo lambda build` output
 * (`make package` writes `target/lambda/{api,worker,notifier,sweeper}/bootstrap.zip`); `stubs`
 * stands in a `bootstrap` that only exits with "not built", so a stack synthesizes (assertion
 * tests, `cdk diff`, CI) on a machine that has not built the Rust functions. Never deploy stubs.
 */
export abstract class FunctionAssets {
  /** `dir/{name}/bootstrap.zip` (`cargo lambda build --output-format zip`, `make package`),
   *  else the folder `dir/{name}` holding `bootstrap` (a plain `cargo lambda build`). */
  static fromBuild(dir: string): FunctionAssets {
    return new BuiltAssets(dir);
  }

  /** A stand-in `bootstrap` for each function, written once per process to a temporary folder;
   *  its asset hash depends only on its content, so synthesized templates stay stable. */
  static stubs(): FunctionAssets {
    return new BuiltAssets(stubsDir());
  }

  /** The code of one function, checked to exist when the stack is constructed. */
  abstract code(name: FunctionName): lambda.Code;
}

class BuiltAssets extends FunctionAssets {
  constructor(private readonly dir: string) {
    super();
  }

  code(name: FunctionName): lambda.Code {
    const zip = path.join(this.dir, name, 'bootstrap.zip');
    if (fs.existsSync(zip)) return lambda.Code.fromAsset(zip);
    if (fs.existsSync(path.join(this.dir, name, 'bootstrap'))) return lambda.Code.fromAsset(path.join(this.dir, name));
    throw new Error(`LongrunService: no ${name} function in ${path.resolve(this.dir)} (neither `
      + `${name}/bootstrap.zip nor ${name}/bootstrap). Build the functions with \`make package\` in the `
      + 'longrun checkout and pass its target/lambda, or pass FunctionAssets.stubs() to synthesize without them.');
  }
}

let stubs: string | undefined;

function stubsDir(): string {
  if (stubs && fs.existsSync(stubs)) return stubs;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'longrun-stub-functions-'));
  for (const f of FUNCTIONS) {
    fs.mkdirSync(path.join(dir, f));
    fs.writeFileSync(path.join(dir, f, 'bootstrap'), '#!/bin/sh\necho "not built: run make package" >&2\nexit 1\n', {
      mode: 0o755,
    });
  }
  stubs = dir;
  // After the app's synth (CDK synthesizes on beforeExit), which copies the assets to cdk.out.
  process.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}
