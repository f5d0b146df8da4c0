// The user's own assertions on the example stack (existing-stack.ts, copied from the longrun
// repository's infra/examples), with @longrun/cdk installed from its tarball: longrun is mounted
// on the team's HTTP API, synthesized with stub function code.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { FunctionAssets } from '@longrun/cdk';
import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';

import { ExistingStack } from './existing-stack';

test('longrun mounts /v1 and /mcp on the team API behind its JWT authorizer, with its functions and outcome topic', () => {
  // Arrange
  const app = new App();
  const stack = new ExistingStack(app, 'team', { assets: FunctionAssets.stubs(), env: { account: '123456789012', region: 'eu-west-1' } });

  // Act
  const t = Template.fromStack(stack);

  // Assert
  t.resourceCountIs('AWS::ApiGatewayV2::Api', 1);
  const apiId = stack.getLogicalId(stack.httpApi.node.defaultChild as never);
  for (const routeKey of ['ANY /v1/{proxy+}', 'POST /mcp']) {
    t.hasResourceProperties('AWS::ApiGatewayV2::Route', { ApiId: { Ref: apiId }, RouteKey: routeKey, AuthorizationType: 'JWT' });
  }
  t.resourceCountIs('AWS::Lambda::Function', 4);
  t.hasResourceProperties('AWS::Lambda::Function', { FunctionName: 'longrun-team-worker', Runtime: 'provided.al2023', Architectures: ['arm64'] });
  t.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'sqs', FilterPolicy: { status: ['completed'] } });
  assert.deepEqual(Object.keys(stack.longrun.functions).sort(), ['api', 'notifier', 'sweeper', 'worker']);
  t.hasOutput('*', { Value: Match.anyValue() });
});
