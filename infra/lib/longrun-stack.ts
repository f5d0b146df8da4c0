import { Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';

import { LongrunService, type LongrunServiceProps } from './longrun-service';

export * from './longrun-service';

export interface LongrunStackProps extends StackProps, LongrunServiceProps {}

/**
 * The stack `cdk deploy` makes: one `LongrunService` and nothing else. The service's id is
 * `Default`, which CDK leaves out of logical ids, so stacks deployed before the construct
 * existed keep every resource (the table above all) in place.
 */
export class LongrunStack extends Stack {
  readonly service: LongrunService;

  constructor(scope: Construct, id: string, props: LongrunStackProps) {
    super(scope, id, props);
    this.service = new LongrunService(this, 'Default', props);
  }
}
