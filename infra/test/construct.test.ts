import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';

import { ExistingStack } from '../examples/existing-stack';
import { stubAssets } from '../lib/longrun-service';

const assets = stubAssets(fs.mkdtempSync(path.join(os.tmpdir(), 'longrun-assets-')));

function synth(): { stack: ExistingStack; t: Template } {
  const app = new App();
  const stack = new ExistingStack(app, 'team', { assetsDir: assets, env: { account: '123456789012', region: 'eu-west-1' } });
  return { stack, t: Template.fromStack(stack) };
}

describe('LongrunService in a stack that has its own API and user pool', () => {
  const { stack, t } = synth();

  it('mounts /v1 and /mcp on the existing API behind a JWT authorizer for its pool, and creates no API of its own', () => {
    t.resourceCountIs('AWS::ApiGatewayV2::Api', 1);
    const apiId = stack.getLogicalId(stack.httpApi.node.defaultChild as never);
    for (const key of ['ANY /v1/{proxy+}', 'POST /mcp']) {
      t.hasResourceProperties('AWS::ApiGatewayV2::Route', {
        ApiId: { Ref: apiId },
        RouteKey: key,
        AuthorizationType: 'JWT',
        AuthorizerId: Match.anyValue(),
      });
    }
    t.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
      ApiId: { Ref: apiId },
      AuthorizerType: 'JWT',
      JwtConfiguration: { Audience: [Match.anyValue()], Issuer: Match.anyValue() },
    });
    t.resourceCountIs('AWS::Cognito::UserPool', 1);
  });

  it('exposes the table, queue, topic and functions for wiring more', () => {
    assert.ok(stack.longrun.table.tableName);
    assert.ok(stack.longrun.stepQueue.queueUrl);
    assert.deepEqual(Object.keys(stack.longrun.functions).sort(), ['api', 'notifier', 'sweeper', 'worker']);
    t.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'sqs',
      FilterPolicy: { status: ['completed'] },
      RawMessageDelivery: true,
    });
  });

  it('starts the weekly digest through the sweeper with a longrun.StartRun input keyed by the event id', () => {
    const rules = t.findResources('AWS::Events::Rule', { Properties: { ScheduleExpression: 'cron(0 7 ? * MON *)' } });
    const [rule] = Object.values(rules);
    assert.ok(rule, 'the weekly rule exists');
    const target = rule.Properties.Targets[0];
    const input = target.InputTransformer ?? { InputTemplate: target.Input };
    assert.match(JSON.stringify(input), /longrun\.StartRun/);
    assert.match(JSON.stringify(input), /digest-bot/);
    assert.match(JSON.stringify(input), /\$\.id|<aws\.events\.event\.id>|aws.events.event.id/);
  });

  it('passes the model limits and worker concurrency to the worker', () => {
    t.hasResourceProperties('AWS::Lambda::Function', {
      FunctionName: 'longrun-team-worker',
      Environment: { Variables: Match.objectLike({ LONGRUN_MODEL_LIMITS: Match.stringLikeRegexp('concurrency:4') }) },
    });
    t.hasResourceProperties('AWS::Lambda::EventSourceMapping', { ScalingConfig: { MaximumConcurrency: 10 } });
  });
});
