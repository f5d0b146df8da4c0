# `terraform test` with a mocked AWS provider: plans the module and checks the properties the
# CDK assertions check. The first run writes the function zips and a console build into
# tests/fixtures (tests/setup); the provider comes from a local mirror, as README.md
# ("Checking it offline") shows, which is what `scripts/infra check` runs.

mock_provider "aws" {
  mock_data "aws_caller_identity" {
    defaults = { account_id = "123456789012" }
  }
  mock_data "aws_region" {
    defaults = { name = "eu-west-1" }
  }
  mock_data "aws_partition" {
    defaults = { partition = "aws" }
  }
  # A mocked provider computes no policy JSON (it would be a random string, which the roles and
  # key policies refuse); every document renders as a real, minimal policy instead. What the
  # module grants is asserted on the documents' statements, which the module sets itself.
  mock_data "aws_iam_policy_document" {
    defaults = {
      json = "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\",\"Action\":\"sts:AssumeRole\",\"Principal\":{\"Service\":\"lambda.amazonaws.com\"}}]}"
    }
  }
}

# Values only known after apply that assertions read in the plan: the DLQ's ARN (redrive
# policy) and what the console's config.json is made of (API endpoint, user pool, client).
override_resource {
  target          = aws_sqs_queue.steps_dlq
  override_during = plan
  values = {
    arn = "arn:aws:sqs:eu-west-1:123456789012:longrun-test-steps-dlq.fifo"
  }
}
# The sealing key's stack outputs its secret's ARN only once CloudFormation has made it, and
# the key's ARN is what the secret is encrypted with.
override_resource {
  target          = aws_cloudformation_stack.seal_key
  override_during = plan
  values = {
    outputs = { SecretArn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:longrun-test-seal-key-AbCdEf" }
  }
}
override_resource {
  target          = aws_kms_key.main
  override_during = plan
  values = {
    arn = "arn:aws:kms:eu-west-1:123456789012:key/11111111-2222-3333-4444-555555555555"
  }
}
override_resource {
  target          = aws_apigatewayv2_api.api
  override_during = plan
  values = {
    api_endpoint  = "https://abc123.execute-api.eu-west-1.amazonaws.com"
    execution_arn = "arn:aws:execute-api:eu-west-1:123456789012:abc123"
    arn           = "arn:aws:apigateway:eu-west-1::/apis/abc123"
  }
}
override_resource {
  target          = aws_cognito_user_pool.users
  override_during = plan
  values = {
    id       = "eu-west-1_TEST"
    endpoint = "cognito-idp.eu-west-1.amazonaws.com/eu-west-1_TEST"
    arn      = "arn:aws:cognito-idp:eu-west-1:123456789012:userpool/eu-west-1_TEST"
  }
}
override_resource {
  target          = aws_cognito_user_pool_client.console
  override_during = plan
  values = {
    id = "testclient"
  }
}

variables {
  stage        = "test"
  app_base_url = "https://console.example.com/app"
  lambda_dir   = "tests/fixtures/lambda"
}

run "fixtures" {
  command = apply
  module {
    source = "./tests/setup"
  }
  variables {
    dir = "tests/fixtures"
  }
}

run "step_queue_feeds_the_worker_with_batch_failures_and_a_dlq" {
  command = plan

  assert {
    condition     = contains(aws_lambda_event_source_mapping.steps.function_response_types, "ReportBatchItemFailures")
    error_message = "the worker must report per-record batch failures"
  }
  assert {
    condition     = jsondecode(aws_sqs_queue.steps.redrive_policy).maxReceiveCount == 5
    error_message = "the step queue must redrive to its DLQ"
  }
  assert {
    condition     = aws_sqs_queue.steps.visibility_timeout_seconds >= 6 * aws_lambda_function.fn["worker"].timeout
    error_message = "visibility timeout must be at least six worker timeouts"
  }
  assert {
    condition     = aws_sqs_queue.steps.fifo_queue && aws_sqs_queue.steps_dlq.fifo_queue
    error_message = "both step queues are FIFO"
  }
  assert {
    condition     = aws_sqs_queue.steps.deduplication_scope == "messageGroup" && aws_sqs_queue.steps.fifo_throughput_limit == "perMessageGroupId"
    error_message = "the step queue runs in FIFO high-throughput mode (dedup and throughput per run)"
  }
}

run "only_the_health_check_skips_the_authorizer" {
  command = plan

  assert {
    condition     = aws_apigatewayv2_route.v1.authorization_type == "JWT"
    error_message = "API routes need the JWT authorizer"
  }
  assert {
    condition     = aws_apigatewayv2_route.healthz.authorization_type == "NONE" && aws_apigatewayv2_route.healthz.route_key == "GET /healthz"
    error_message = "only GET /healthz is open"
  }
}

run "table_is_recoverable_and_expires_items" {
  command = plan

  assert {
    condition     = aws_dynamodb_table.runs.point_in_time_recovery[0].enabled && aws_dynamodb_table.runs.ttl[0].attribute_name == "expires_at"
    error_message = "PITR and TTL must be on"
  }
  assert {
    condition     = aws_dynamodb_table.runs.billing_mode == "PAY_PER_REQUEST"
    error_message = "on-demand billing"
  }
}

run "functions_run_on_graviton" {
  command = plan

  assert {
    condition     = alltrue([for f in aws_lambda_function.fn : f.runtime == "provided.al2023" && contains(f.architectures, "arm64")])
    error_message = "every function is provided.al2023 on arm64"
  }
}

run "the_sealing_key_is_generated_by_secrets_manager_encrypted_and_retained" {
  command = plan

  assert {
    condition     = keys(jsondecode(aws_cloudformation_stack.seal_key.template_body).Resources) == ["SealKey"]
    error_message = "the stack holds the secret alone: no rotation schedule, no rotation function"
  }
  assert {
    condition = jsondecode(aws_cloudformation_stack.seal_key.template_body).Resources.SealKey == merge(
      jsondecode(aws_cloudformation_stack.seal_key.template_body).Resources.SealKey,
      {
        Type                = "AWS::SecretsManager::Secret"
        DeletionPolicy      = "Retain"
        UpdateReplacePolicy = "Retain"
      },
    )
    error_message = "the sealing key is a secret CloudFormation retains on delete and on replacement"
  }
  assert {
    condition = jsondecode(aws_cloudformation_stack.seal_key.template_body).Resources.SealKey.Properties.GenerateSecretString == {
      PasswordLength = 64, ExcludePunctuation = true, IncludeSpace = false
    }
    error_message = "Secrets Manager generates 64 letters and digits, so the value is never in the plan or the state"
  }
  assert {
    condition     = aws_cloudformation_stack.seal_key.parameters["Name"] == "longrun-test-seal-key" && aws_cloudformation_stack.seal_key.parameters["KmsKeyId"] == aws_kms_key.main.arn
    error_message = "the secret is named after the stage and encrypted with the module's KMS key"
  }
}

# Statements are picked by sid, which the module sets: the others hold ARNs not known in a plan.
run "every_function_is_told_where_the_sealing_key_is_and_only_they_may_read_it" {
  command = plan

  assert {
    condition     = alltrue([for f in aws_lambda_function.fn : lookup(f.environment[0].variables, "LONGRUN_SEAL_KEY_SECRET", "") == "arn:aws:secretsmanager:eu-west-1:123456789012:secret:longrun-test-seal-key-AbCdEf"])
    error_message = "every function gets LONGRUN_SEAL_KEY_SECRET, the secret's ARN"
  }
  assert {
    condition = alltrue([for k in ["api", "worker", "notifier", "sweeper"] : [
      for s in data.aws_iam_policy_document.fn[k].statement : { actions = s.actions, resources = s.resources } if s.sid == "SealKey"
    ] == [{ actions = toset(["secretsmanager:GetSecretValue"]), resources = toset([local.seal_key_arn]) }]])
    error_message = "each of the four functions' roles may GetSecretValue on the sealing key, nothing more"
  }
  assert {
    condition = alltrue([for k in ["api", "worker", "notifier", "sweeper"] : [
      for s in data.aws_iam_policy_document.fn[k].statement : s.sid if anytrue([for a in s.actions : startswith(a, "secretsmanager:") || a == "*"])
    ] == ["SealKey"]])
    error_message = "without a model or search key, the sealing key is the only secret a function may read"
  }
  assert {
    condition = alltrue([for k in ["api", "worker", "notifier", "sweeper"] : anytrue([
      for s in data.aws_iam_policy_document.fn[k].statement : contains(s.actions, "kms:Decrypt") && s.resources == toset([aws_kms_key.main.arn]) if s.sid == "Key"
    ])])
    error_message = "each of the four functions may decrypt with the key the secret is encrypted with"
  }
  assert {
    condition     = toset(keys(data.aws_iam_policy_document.fn)) == toset(["api", "worker", "notifier", "sweeper"])
    error_message = "the function policies are the four functions' only"
  }
  assert {
    condition = alltrue([for d in concat([data.aws_iam_policy_document.key, data.aws_iam_policy_document.failed_queue], values(data.aws_iam_policy_document.tls_only)) :
      !anytrue([for s in d.statement : anytrue([for a in s.actions : startswith(a, "secretsmanager:") || a == "*"])])
    ])
    error_message = "no other policy of the module grants anything in Secrets Manager"
  }
}

run "the_worker_may_invoke_exactly_the_configured_bedrock_models" {
  command = plan

  variables {
    models = "bedrock:anthropic.claude-haiku-4-5-20251001-v1:0, bedrock:global.amazon.nova-pro-v1:0, openai:gpt-4.1-mini"
  }

  assert {
    condition = toset(local.bedrock_resources) == toset([
      "arn:aws:bedrock:*::foundation-model/anthropic.claude-haiku-4-5-20251001-v1:0",
      "arn:aws:bedrock:*::foundation-model/amazon.nova-pro-v1:0",
      "arn:aws:bedrock:eu-west-1:123456789012:inference-profile/global.amazon.nova-pro-v1:0",
    ])
    error_message = "InvokeModel on the configured models and profiles only"
  }
}

run "the_console_is_hosted_privately_behind_cloudfront_and_answers_deep_links" {
  command = plan

  variables {
    app_base_url = ""
    console_dir  = run.fixtures.console_dir
  }

  assert {
    condition     = aws_cloudfront_distribution.console[0].default_root_object == "index.html"
    error_message = "the distribution serves index.html at /"
  }
  assert {
    condition     = alltrue([for r in aws_cloudfront_distribution.console[0].custom_error_response : r.response_page_path == "/index.html" && r.response_code == 200])
    error_message = "unknown paths (deep links) must be answered with the app"
  }
  assert {
    condition     = aws_s3_bucket_public_access_block.console[0].restrict_public_buckets
    error_message = "the console bucket is private"
  }
  assert {
    condition     = aws_s3_object.console["assets/app.js"].cache_control == "public, max-age=31536000, immutable" && aws_s3_object.console["index.html"].cache_control == "no-cache"
    error_message = "hashed assets are cached for good, index.html is revalidated"
  }
  assert {
    condition     = jsondecode(aws_s3_object.console_config[0].content).live == "poll"
    error_message = "behind API Gateway the console long-polls"
  }
}
