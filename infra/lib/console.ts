import * as fs from 'node:fs';
import * as path from 'node:path';

import { type CfnResource, Duration, RemovalPolicy, Stack, Token, Validations } from 'aws-cdk-lib';
import * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as origins from 'aws-cdk-lib/aws-cloudfront-origins';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as s3deploy from 'aws-cdk-lib/aws-s3-deployment';
import { Construct } from 'constructs';

import { checkovSkip } from './checks';

/** What the console reads from `/config.json` (see web/src/config.ts). */
export interface ConsoleConfig {
  readonly apiUrl: string;
  readonly auth: { mode: 'oidc'; issuer: string; clientId: string; scopes: string; tokenType: 'access_token' };
  /** API Gateway does not stream, so the run page long-polls `/events?wait=`. */
  readonly live: 'poll';
}

export interface ConsoleSiteProps {
  readonly stage: string;
  readonly prod: boolean;
  /** The console's build output (web/dist). */
  readonly dir: string;
  /** Origins the page may call: the API and the sign-in provider. */
  readonly connectSrc: string[];
}

/**
 * The web console as static files: a private bucket read only by CloudFront (origin access
 * control), every unknown path answered with index.html so deep links open the app, and
 * security headers (CSP, HSTS, no framing) on every response.
 */
export class ConsoleSite extends Construct {
  readonly bucket: s3.Bucket;
  readonly distribution: cloudfront.Distribution;
  /** `https://<distribution domain>`: the app base URL when the caller has no domain of its own. */
  readonly url: string;

  constructor(scope: Construct, id: string, private readonly props: ConsoleSiteProps) {
    super(scope, id);
    const removal = props.prod ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
    const logs = new s3.Bucket(this, 'AccessLogs', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      // CloudFront standard logs are delivered through bucket ACLs.
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
      lifecycleRules: [{ expiration: Duration.days(90) }],
      removalPolicy: removal,
      // Outside prod, `cdk destroy` empties the buckets so deleting the stack succeeds.
      autoDeleteObjects: !props.prod,
    });
    checkovSkip(logs.node.defaultChild as CfnResource,
      { id: 'CKV_AWS_18', comment: 'It is the access-log bucket; logging it would loop.' },
      { id: 'CKV_AWS_21', comment: 'Logs are written once and expire after 90 days; versions add nothing.' });
    this.bucket = new s3.Bucket(this, 'Files', {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      versioned: true,
      serverAccessLogsBucket: logs,
      serverAccessLogsPrefix: 's3/',
      removalPolicy: removal,
      autoDeleteObjects: !props.prod,
    });
    const emptier = Stack.of(this).node.tryFindChild('Custom::S3AutoDeleteObjectsCustomResourceProvider');
    const handler = emptier?.node.tryFindChild('Handler');
    if (handler) {
      const reason = "CDK's bucket-emptying function: it runs only when CloudFormation deletes a non-prod stack.";
      skipDeployTimeFunction(handler as CfnResource, reason);
    }
    const headers = new cloudfront.ResponseHeadersPolicy(this, 'Headers', {
      responseHeadersPolicyName: `longrun-${props.stage}-console`,
      securityHeadersBehavior: {
        contentSecurityPolicy: {
          contentSecurityPolicy: [
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self'",
            "img-src 'self' data:",
            `connect-src 'self' ${props.connectSrc.join(' ')}`,
            "frame-ancestors 'none'",
            "base-uri 'none'",
            "form-action 'self'",
          ].join('; '),
          override: true,
        },
        strictTransportSecurity: { accessControlMaxAge: Duration.days(365), includeSubdomains: true, override: true },
        contentTypeOptions: { override: true },
        frameOptions: { frameOption: cloudfront.HeadersFrameOption.DENY, override: true },
        referrerPolicy: { referrerPolicy: cloudfront.HeadersReferrerPolicy.NO_REFERRER, override: true },
      },
    });
    this.distribution = new cloudfront.Distribution(this, 'Cdn', {
      comment: `longrun ${props.stage} console`,
      defaultRootObject: 'index.html',
      defaultBehavior: {
        origin: origins.S3BucketOrigin.withOriginAccessControl(this.bucket),
        viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
        responseHeadersPolicy: headers,
        cachePolicy: cloudfront.CachePolicy.CACHING_OPTIMIZED,
        compress: true,
      },
      // A deep link (/runs/{id}) is no object in the bucket: serve the app, which routes it.
      errorResponses: [403, 404].map((httpStatus) => ({
        httpStatus,
        responseHttpStatus: 200,
        responsePagePath: '/index.html',
        ttl: Duration.seconds(0),
      })),
      httpVersion: cloudfront.HttpVersion.HTTP2_AND_3,
      enableLogging: true,
      logBucket: logs,
      logFilePrefix: 'cloudfront/',
    });
    this.url = `https://${this.distribution.distributionDomainName}`;
  }

  /** Uploads the build and its config.json, and invalidates what is not content-hashed. */
  deploy(config: ConsoleConfig): s3deploy.BucketDeployment {
    const upload = new s3deploy.BucketDeployment(this, 'Upload', {
      destinationBucket: this.bucket,
      sources: [s3deploy.Source.asset(this.props.dir), s3deploy.Source.jsonData('config.json', config)],
      distribution: this.distribution,
      distributionPaths: ['/index.html', '/config.json'],
      prune: true,
      memoryLimit: 256,
    });
    // The upload runs CDK's own copy function (a stack-level singleton) once per deploy.
    const stack = Stack.of(this);
    const copier = stack.node.children.find((c) => c.node.id.startsWith('Custom::CDKBucketDeployment'));
    if (copier) {
      const why = (id: string, reason: string) => Validations.of(copier).acknowledge({ id, reason });
      const cdkOwned = "CDK's BucketDeployment function, which runs only while CloudFormation deploys the console";
      why('AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
        `${cdkOwned}: the basic execution role, for its logs.`);
      const unresolved = (v: string, name: string) => (Token.isUnresolved(v) ? `<AWS::${name}>` : v);
      const files = stack.getLogicalId(this.bucket.node.defaultChild as s3.CfnBucket);
      for (const finding of [
        'Action::s3:GetObject*', 'Action::s3:GetBucket*', 'Action::s3:List*', 'Action::s3:DeleteObject*', 'Action::s3:Abort*',
        `Resource::arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-${unresolved(stack.account, 'AccountId')}-${unresolved(stack.region, 'Region')}/*`,
        `Resource::<${files}.Arn>/*`,
      ]) {
        why(`AwsSolutions-IAM5[${finding}]`, `${cdkOwned}: CDK grants it the asset bucket's objects and the console bucket's.`);
      }
      why('AwsSolutions-IAM5[Resource::*]', `${cdkOwned}: CloudFront invalidations have no narrower resource.`);
      why('AwsSolutions-L1', `${cdkOwned}: CDK pins its runtime.`);
      why('Serverless-LambdaLatestVersion', `${cdkOwned}: CDK pins its runtime.`);
      why('Serverless-LambdaDLQ', `${cdkOwned}: invoked synchronously by CloudFormation, which reports failures.`);
      why('Serverless-LambdaTracing', `${cdkOwned}: nothing to trace.`);
    }
    if (copier) {
      const reason = "CDK's BucketDeployment function: it runs only during a deploy, invoked by CloudFormation.";
      skipDeployTimeFunction(copier.node.defaultChild as CfnResource, reason);
      for (const policy of copier.node.findAll().filter((c) => c instanceof iam.CfnPolicy)) {
        checkovSkip(policy as CfnResource, { id: 'CKV_AWS_111', comment: `${reason} CloudFront invalidations take no narrower resource.` });
      }
    }
    const cdn = this.distribution;
    checkovSkip(cdn.node.defaultChild as CfnResource,
      { id: 'CKV_AWS_68', comment: 'Public static files; attach a WAF web ACL where policy requires one.' },
      { id: 'CKV_AWS_174', comment: 'The default *.cloudfront.net certificate fixes the TLS policy; a custom domain sets TLSv1.2_2021.' });
    Validations.of(cdn).acknowledge({ id: 'AwsSolutions-CFR1', reason: 'The console is for signed-in users anywhere; the API does the authorization.' });
    Validations.of(cdn).acknowledge({ id: 'AwsSolutions-CFR2', reason: 'Public static files only; the API behind it has its own JWT authorizer and throttling. Attach a WAF web ACL where policy requires one.' });
    Validations.of(cdn).acknowledge({ id: 'AwsSolutions-CFR4', reason: "The default *.cloudfront.net certificate cannot pin TLS 1.2; with a custom domain and certificate the distribution's TLSv1.2_2021 minimum applies." });
    return upload;
  }
}

/** CDK's own deploy-time functions: no concurrency limit, DLQ, VPC or environment key to give. */
function skipDeployTimeFunction(fn: CfnResource, reason: string) {
  checkovSkip(fn, ...['CKV_AWS_115', 'CKV_AWS_116', 'CKV_AWS_117', 'CKV_AWS_173'].map((id) => ({ id, comment: reason })));
}

/** A placeholder build for an offline synth when web/dist was not built. */
export function stubConsole(dir: string): string {
  fs.mkdirSync(dir, { recursive: true });
  const index = path.join(dir, 'index.html');
  if (!fs.existsSync(index)) {
    fs.writeFileSync(index, '<!doctype html><title>longrun</title><p>Console not built: run make web.</p>\n');
  }
  return dir;
}

/** Origins the console must reach for an issuer: its own, and Cognito's hosted sign-in. */
export function signInOrigins(stack: Stack, issuer: string, cognito: boolean): string[] {
  if (cognito) return [`https://cognito-idp.${stack.region}.amazonaws.com`, `https://*.auth.${stack.region}.amazoncognito.com`];
  return [new URL(issuer).origin];
}
