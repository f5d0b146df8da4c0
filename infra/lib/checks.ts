import type { CfnResource } from 'aws-cdk-lib';

type Skip = { id: string; comment: string };

/** Records checkov findings we accept, with the reason, on the resource itself. */
export function checkovSkip(resource: CfnResource, ...skips: Skip[]): void {
  const existing = (resource.getMetadata('checkov') as { skip?: Skip[] } | undefined)?.skip ?? [];
  resource.addMetadata('checkov', { skip: [...existing, ...skips] });
}
