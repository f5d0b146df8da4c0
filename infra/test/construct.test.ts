import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import { App, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';

import { ExistingStack } from '../examples/existing-stack';
import { FUNCTIONS, FunctionAssets, LongrunService, type LongrunServiceProps } from '../lib/longrun-service';

const env = { account: '123456789012', region: 'eu-west-1' };

function synth(): { stack: ExistingStack; t: Template } {
  const app = new App();
  const stack = new ExistingStack(app, 'team', { assets: FunctionAssets.stubs(), env });
  return { stack, t: Template.fromStack(stack) };
}

/** A LongrunService alone in a stack, with the given code for its functions. */
function service(code: Pick<LongrunServiceProps, 'assets' | 'assetsDir'>): Template {
  const stack = new Stack(new App(), 'alone', { env });
  new LongrunService(stack, 'Longrun', { stage: 't', appBaseUrl: 'https://app.example.com', llm: { models: 'openai:gpt-4.1-mini' }, ...code });
  return Template.fromStack(stack);
}

describe('where the functions\' code comes from', () => {
  it('takes the make package zips from a build folder, through assets or the assetsDir shorthand', () => {
    // Arrange
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'longrun-build-'));
    for (const f of FUNCTIONS) {
      fs.mkdirSync(path.join(dir, f));
      fs.writeFileSync(path.join(dir, f, 'bootstrap.zip'), `zip of ${f}`);
    }

    // Act
    const templates = [service({ assets: FunctionAssets.fromBuild(dir) }), service({ assetsDir: dir })];

    // Assert: a zip is uploaded as it is, so its asset is a .zip key.
    for (const t of templates) {
      const fns = Object.values(t.findResources('AWS::Lambda::Function'));
      assert.equal(fns.length, 4);
      for (const fn of fns) assert.match(JSON.stringify(fn.Properties.Code.S3Key), /\.zip/);
    }
  });

  it('names the missing function, make package and FunctionAssets.stubs() when the build folder is not there', () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'longrun-nobuild-'));
    assert.throws(() => service({ assetsDir: empty }), /no api function in .*make package.*FunctionAssets\.stubs\(\)/s);
    assert.throws(() => service({}), /assets is required/);
    assert.throws(() => service({ assets: FunctionAssets.stubs(), assetsDir: empty }), /not both/);
  });

  it('synthesizes with stubs, whose code only says it was not built', () => {
    const t = service({ assets: FunctionAssets.stubs() });
    t.resourceCountIs('AWS::Lambda::Function', 4);
    t.hasResourceProperties('AWS::Lambda::Function', { FunctionName: 'longrun-t-worker', Handler: 'bootstrap' });
  });
});

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

  it('exposes the table, queue, topic, sealing key and functions for wiring more', () => {
    assert.ok(stack.longrun.table.tableName);
    assert.ok(stack.longrun.stepQueue.queueUrl);
    assert.ok(stack.longrun.sealKey.secretArn);
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
