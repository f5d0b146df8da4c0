// longrun added to a stack that already has its own HTTP API and Cognito user pool:
// `LongrunService` mounts `/v1` and `/mcp` on that API behind the pool's tokens, a weekly
// schedule starts a digest run, and the team's own queue hears about completed runs.
// In your own CDK app: `npm install <path>/longrun-cdk-0.1.0.tgz` (see infra/README.md), copy
// this file, and synthesize with `-c assetsDir=<longrun checkout>/target/lambda` (after `make
// package`) or, before the functions are built, `-c stubAssets=true`. In this repository, from
// infra/: `npx tsc && npx cdk synth --app "node dist/examples/existing-stack.js" -c stubAssets=true`.
import { App, Stack, type StackProps } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import * as cognito from 'aws-cdk-lib/aws-cognito';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subs from 'aws-cdk-lib/aws-sns-subscriptions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';

import { FunctionAssets, LongrunService } from '@longrun/cdk';

export interface ExistingStackProps extends StackProps {
  /** `FunctionAssets.fromBuild(dir)` with the `make package` output, or `FunctionAssets.stubs()`. */
  readonly assets: FunctionAssets;
}

export class ExistingStack extends Stack {
  readonly longrun: LongrunService;
  readonly httpApi: apigw.HttpApi;
  readonly completed: sqs.Queue;

  constructor(scope: Construct, id: string, props: ExistingStackProps) {
    super(scope, id, props);
    // What the team had before longrun.
    const pool = new cognito.UserPool(this, 'Users', { selfSignUpEnabled: false });
    const client = pool.addClient('Web', { authFlows: { userSrp: true } });
    this.httpApi = new apigw.HttpApi(this, 'Api', { apiName: 'team-api' });

    this.longrun = new LongrunService(this, 'Longrun', {
      stage: 'team',
      appBaseUrl: 'https://app.example.com/longrun',
      httpApi: this.httpApi,
      jwt: {
        issuer: `https://cognito-idp.${this.region}.amazonaws.com/${pool.userPoolId}`,
        audience: [client.userPoolClientId],
      },
      llm: { models: 'bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0' },
      modelLimits: 'bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0=concurrency:4,rpm:40',
      workerMaxConcurrency: 10,
      assets: props.assets,
    });

    // Every Monday at 07:00 UTC: a digest run for one user. The scheduled event's id is the
    // run's idempotency key, so a retried delivery starts it once.
    new events.Rule(this, 'WeeklyDigest', {
      schedule: events.Schedule.cron({ minute: '0', hour: '7', weekDay: 'MON' }),
      targets: [
        new targets.LambdaFunction(this.longrun.functions.sweeper, {
          event: events.RuleTargetInput.fromObject({
            id: events.EventField.eventId,
            source: 'team.digest',
            'detail-type': 'longrun.StartRun',
            detail: {
              user_id: 'digest-bot',
              template: { objective: 'Write the weekly digest of the team notes', budgets: { max_iterations: 20 } },
            },
          }),
          retryAttempts: 2,
        }),
      ],
    });

    // The team's own consumer of completed runs, filtered on the outcome's status attribute.
    this.completed = new sqs.Queue(this, 'CompletedRuns', { enforceSSL: true });
    this.longrun.topic.addSubscription(
      new subs.SqsSubscription(this.completed, {
        filterPolicy: { status: sns.SubscriptionFilter.stringFilter({ allowlist: ['completed'] }) },
        rawMessageDelivery: true,
      }),
    );
  }
}

if (require.main === module) {
  const app = new App();
  const assetsDir: unknown = app.node.tryGetContext('assetsDir');
  const stubs = String(app.node.tryGetContext('stubAssets')) === 'true';
  if (!stubs && typeof assetsDir !== 'string') {
    throw new Error('Say where the functions are: -c assetsDir=<longrun checkout>/target/lambda (make package), '
      + 'or -c stubAssets=true to synthesize without them.');
  }
  new ExistingStack(app, 'team-with-longrun', {
    assets: stubs ? FunctionAssets.stubs() : FunctionAssets.fromBuild(String(assetsDir)),
    env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  });
}
