# The longrun stack, resource for resource the same as the CDK app in ../lib/longrun-stack.ts.

data "aws_caller_identity" "current" {}
data "aws_region" "current" {}
data "aws_partition" "current" {}

locals {
  name        = "longrun-${var.stage}"
  prod        = var.stage == "prod"
  create_pool = var.jwt_issuer == ""
  region      = data.aws_region.current.name
  account     = data.aws_caller_identity.current.account_id
  # The worker's timeout bounds one iteration; SQS wants six times that as visibility.
  worker_timeout = 150
  visibility     = 6 * local.worker_timeout
  # The dead-letter threshold every deployment shares, serve included.
  max_receives  = jsondecode(file("${path.module}/queue.json")).max_receives
  statuses      = ["completed", "stopped", "canceled", "failed", "waiting_on_user"]
  log_retention = local.prod ? 90 : 30
  functions = {
    api      = { memory = 256, timeout = 29, reserved = -1 }
    worker   = { memory = 256, timeout = local.worker_timeout, reserved = -1 }
    notifier = { memory = 256, timeout = 60, reserved = 5 }
    sweeper  = { memory = 256, timeout = 60, reserved = 1 }
  }
  async_functions = toset(["notifier", "sweeper"])
  environment = merge(
    {
      LONGRUN_MODELS          = var.models
      LONGRUN_TABLE           = aws_dynamodb_table.runs.name
      LONGRUN_QUEUE_URL       = aws_sqs_queue.steps.url
      LONGRUN_TOPIC_ARN       = aws_sns_topic.outcomes.arn
      LONGRUN_SEAL_KEY_SECRET = local.seal_key_arn
      LONGRUN_APP_BASE_URL    = local.app_base_url
      LONGRUN_ACTIVE_LIMIT    = tostring(var.active_run_limit)
      LONGRUN_SWEEP_STALE_MS  = tostring((local.visibility + 60) * 1000)
      RUST_LOG                = "info"
    },
    var.openai_base_url == "" ? {} : { OPENAI_BASE_URL = var.openai_base_url },
  )
  # Only the worker calls the model, so only it learns where the key is (and may read it).
  worker_environment = merge(
    var.llm_key_secret_name == "" ? {} : { LONGRUN_LLM_KEY_SECRET = var.llm_key_secret_name },
    var.model_limits == "" ? {} : { LONGRUN_MODEL_LIMITS = var.model_limits },
    var.search_provider == "" ? {} : { LONGRUN_SEARCH = var.search_provider, LONGRUN_SEARCH_KEY_SECRET = var.search_key_secret_name },
  )
  origin   = regex("^(https?://[^/]+)", local.app_base_url)[0]
  issuer   = local.create_pool ? "https://cognito-idp.${local.region}.amazonaws.com/${aws_cognito_user_pool.users[0].id}" : var.jwt_issuer
  audience = local.create_pool ? [aws_cognito_user_pool_client.console[0].id] : var.jwt_audience
}

# --- encryption ------------------------------------------------------------------------------

data "aws_iam_policy_document" "key" {
  # In a key policy "*" means this key; the account statement is the default key policy.
  #checkov:skip=CKV_AWS_111:Key policy: resource "*" is the key itself.
  #checkov:skip=CKV_AWS_356:Key policy: resource "*" is the key itself.
  #checkov:skip=CKV_AWS_109:Key policy: the account root keeps administering its key (AWS default).
  statement {
    sid       = "Account"
    actions   = ["kms:*"]
    resources = ["*"]
    principals {
      type        = "AWS"
      identifiers = ["arn:${data.aws_partition.current.partition}:iam::${local.account}:root"]
    }
  }
  statement {
    sid       = "Services"
    actions   = ["kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:ReEncryptFrom", "kms:ReEncryptTo"]
    resources = ["*"]
    principals {
      type = "Service"
      identifiers = [
        "logs.${local.region}.amazonaws.com",
        "events.amazonaws.com",
        "sns.amazonaws.com",
        "cloudwatch.amazonaws.com",
      ]
    }
  }
}

resource "aws_kms_key" "main" {
  description         = "longrun: table, queues, topic, logs and function environments"
  enable_key_rotation = true
  policy              = data.aws_iam_policy_document.key.json
}

resource "aws_kms_alias" "main" {
  name          = "alias/${local.name}"
  target_key_id = aws_kms_key.main.key_id
}

# --- sealing key -----------------------------------------------------------------------------

# The key that seals the tool, MCP and webhook secrets users register, in the table; every
# function reads it at cold start (LONGRUN_SEAL_KEY_SECRET). The same AWS::SecretsManager::Secret
# the CDK app creates, in a stack of its own: Secrets Manager generates the value
# (GenerateSecretString), so it is never in a plan or in this state, and CloudFormation retains
# the secret when the stack is deleted (`terraform destroy` included), as RemovalPolicy.RETAIN
# does in the CDK app: without it no sealed value in the table, or a backup of it, opens again.
# (An ephemeral aws_secretsmanager_random_password written to secret_string_wo would keep the
# value out of the state too, but Terraform's mock providers (1.11) fail the validation of every
# ephemeral resource, so `terraform test` could not plan the module at all; the data source of
# that name would leave the key in the state.)
resource "aws_cloudformation_stack" "seal_key" {
  #checkov:skip=CKV_AWS_124:A one-resource stack changed only with the module; its events are in the Terraform run.
  name = "${local.name}-seal-key"
  parameters = {
    Name     = "${local.name}-seal-key"
    KmsKeyId = aws_kms_key.main.arn
  }
  template_body = jsonencode({
    AWSTemplateFormatVersion = "2010-09-09"
    Description              = "longrun: the key that seals registered tool, MCP and webhook secrets in the table"
    Parameters = {
      Name     = { Type = "String" }
      KmsKeyId = { Type = "String" }
    }
    Resources = {
      SealKey = {
        Type = "AWS::SecretsManager::Secret"
        # Never deleted and never rotated (no RotationSchedule): a new key opens no value sealed
        # with the old one; it changes only together with a re-seal of the table. (checkov's
        # rotation check, CKV2_AWS_57, is for aws_secretsmanager_secret; it has none for a
        # CloudFormation secret, and the template passes cfn-lint and checkov as it is.)
        DeletionPolicy      = "Retain"
        UpdateReplacePolicy = "Retain"
        Properties = {
          Name        = { Ref = "Name" }
          Description = "longrun: the key that seals registered tool, MCP and webhook secrets in the table"
          KmsKeyId    = { Ref = "KmsKeyId" }
          GenerateSecretString = {
            PasswordLength     = 64
            ExcludePunctuation = true
            IncludeSpace       = false
          }
        }
      }
    }
    Outputs = {
      SecretArn = { Value = { Ref = "SealKey" } }
    }
  })
}

locals {
  seal_key_arn = aws_cloudformation_stack.seal_key.outputs["SecretArn"]
}

# --- table -----------------------------------------------------------------------------------

resource "aws_dynamodb_table" "runs" {
  name                        = "${local.name}-runs"
  billing_mode                = "PAY_PER_REQUEST"
  hash_key                    = "PK"
  range_key                   = "SK"
  deletion_protection_enabled = local.prod

  dynamic "attribute" {
    for_each = ["PK", "SK", "GSI1PK", "GSI1SK", "GSI2PK", "GSI2SK"]
    content {
      name = attribute.value
      type = "S"
    }
  }

  # GSI1: a user's runs with their status (runs are then read by key). GSI2 (sparse): runs
  # owing a step or an outcome, by last write rounded down to 5 minutes, and schedules and
  # pending webhook deliveries (their body) by when they are due. Keep in step with
  # shared/aws/src/dynamodb.rs `INDEXES`.
  dynamic "global_secondary_index" {
    for_each = { GSI1 = "status", GSI2 = "body" }
    content {
      name               = global_secondary_index.key
      hash_key           = "${global_secondary_index.key}PK"
      range_key          = "${global_secondary_index.key}SK"
      projection_type    = "INCLUDE"
      non_key_attributes = [global_secondary_index.value]
    }
  }

  ttl {
    attribute_name = "expires_at"
    enabled        = true
  }

  point_in_time_recovery {
    enabled = true
  }

  server_side_encryption {
    enabled     = true
    kms_key_arn = aws_kms_key.main.arn
  }
}

# --- queues and topic ------------------------------------------------------------------------

resource "aws_sqs_queue" "steps_dlq" {
  name                      = "${local.name}-steps-dlq.fifo"
  fifo_queue                = true
  message_retention_seconds = 14 * 24 * 3600
  kms_master_key_id         = aws_kms_key.main.arn
}

resource "aws_sqs_queue" "steps" {
  name                        = "${local.name}-steps.fifo"
  fifo_queue                  = true
  content_based_deduplication = false # every message carries its own "{run_id}#{n}" id
  # High-throughput FIFO: dedup ids are unique within a run's group, each run has its own
  # throughput, so the queue is not held to ~300 sends/s in all.
  deduplication_scope        = "messageGroup"
  fifo_throughput_limit      = "perMessageGroupId"
  visibility_timeout_seconds = local.visibility
  message_retention_seconds  = 4 * 24 * 3600
  kms_master_key_id          = aws_kms_key.main.arn
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.steps_dlq.arn
    maxReceiveCount     = local.max_receives
  })
}

# Async invocations (SNS -> notifier, EventBridge -> sweeper) that fail for good land here.
resource "aws_sqs_queue" "failed" {
  name                      = "${local.name}-failed-invocations"
  message_retention_seconds = 14 * 24 * 3600
  kms_master_key_id         = aws_kms_key.main.arn
}

data "aws_iam_policy_document" "tls_only" {
  for_each = {
    steps     = aws_sqs_queue.steps.arn
    steps_dlq = aws_sqs_queue.steps_dlq.arn
    failed    = aws_sqs_queue.failed.arn
  }
  statement {
    effect    = "Deny"
    actions   = ["sqs:*"]
    resources = [each.value]
    principals {
      type        = "*"
      identifiers = ["*"]
    }
    condition {
      test     = "Bool"
      variable = "aws:SecureTransport"
      values   = ["false"]
    }
  }
}

data "aws_iam_policy_document" "failed_queue" {
  source_policy_documents = [data.aws_iam_policy_document.tls_only["failed"].json]
  statement {
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.failed.arn]
    principals {
      type        = "Service"
      identifiers = ["sns.amazonaws.com", "events.amazonaws.com"]
    }
  }
}

resource "aws_sqs_queue_policy" "steps" {
  queue_url = aws_sqs_queue.steps.id
  policy    = data.aws_iam_policy_document.tls_only["steps"].json
}

resource "aws_sqs_queue_policy" "steps_dlq" {
  queue_url = aws_sqs_queue.steps_dlq.id
  policy    = data.aws_iam_policy_document.tls_only["steps_dlq"].json
}

resource "aws_sqs_queue_policy" "failed" {
  queue_url = aws_sqs_queue.failed.id
  policy    = data.aws_iam_policy_document.failed_queue.json
}

resource "aws_sns_topic" "outcomes" {
  name              = "${local.name}-outcomes"
  kms_master_key_id = aws_kms_key.main.arn
}

resource "aws_sns_topic_subscription" "notifier" {
  topic_arn     = aws_sns_topic.outcomes.arn
  protocol      = "lambda"
  endpoint      = aws_lambda_function.fn["notifier"].arn
  filter_policy = jsonencode({ status = local.statuses })
  redrive_policy = jsonencode({
    deadLetterTargetArn = aws_sqs_queue.failed.arn
  })
}

resource "aws_lambda_permission" "notifier_from_sns" {
  statement_id  = "AllowSns"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.fn["notifier"].function_name
  principal     = "sns.amazonaws.com"
  source_arn    = aws_sns_topic.outcomes.arn
}

# --- functions -------------------------------------------------------------------------------

resource "aws_cloudwatch_log_group" "fn" {
  for_each          = local.functions
  name              = "/aws/lambda/${local.name}-${each.key}"
  retention_in_days = local.log_retention
  kms_key_id        = aws_kms_key.main.arn
}

data "aws_iam_policy_document" "assume_lambda" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "fn" {
  for_each           = local.functions
  name               = "${local.name}-${each.key}"
  description        = "longrun ${each.key} function"
  assume_role_policy = data.aws_iam_policy_document.assume_lambda.json
}

locals {
  table_arns = [aws_dynamodb_table.runs.arn, "${aws_dynamodb_table.runs.arn}/index/GSI1"]
  item_rw    = ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query", "dynamodb:ConditionCheckItem"]
  # Least privilege, per function: the item actions each one's code issues, nothing else.
  table_actions = {
    # BatchGetItem: listing a user's runs and the sweeper's candidates read runs by key.
    api      = concat(local.item_rw, ["dynamodb:DeleteItem", "dynamodb:BatchGetItem"])
    worker   = local.item_rw
    notifier = local.item_rw
    sweeper  = concat(local.item_rw, ["dynamodb:BatchGetItem"])
  }
  enqueues = toset(["api", "worker", "sweeper"])
  # Bedrock models are called with the worker's own role; a cross-Region inference profile
  # (us., eu., global., ...) needs the profile and its base model.
  bedrock_ids = [for m in split(",", var.models) : trimprefix(trimspace(m), "bedrock:") if startswith(trimspace(m), "bedrock:")]
  bedrock_resources = flatten([for id in local.bedrock_ids : concat(
    ["arn:${data.aws_partition.current.partition}:bedrock:*::foundation-model/${replace(id, "/^(us|eu|apac|global|jp|au|ca)\\./", "")}"],
    length(regexall("^(us|eu|apac|global|jp|au|ca)\\.", id)) > 0 ? ["arn:${data.aws_partition.current.partition}:bedrock:${local.region}:${local.account}:inference-profile/${id}"] : []
  )])
}

data "aws_iam_policy_document" "fn" {
  for_each = local.functions

  statement {
    sid     = "Logs"
    actions = ["logs:CreateLogStream", "logs:PutLogEvents"]
    # Lambda names a log stream per execution environment, inside this function's group.
    resources = [aws_cloudwatch_log_group.fn[each.key].arn, "${aws_cloudwatch_log_group.fn[each.key].arn}:log-stream:*"]
  }
  statement {
    sid       = "Table"
    actions   = local.table_actions[each.key]
    resources = each.key == "sweeper" ? concat(local.table_arns, ["${aws_dynamodb_table.runs.arn}/index/GSI2"]) : local.table_arns
  }
  statement {
    sid       = "Key"
    actions   = ["kms:Decrypt", "kms:GenerateDataKey"]
    resources = [aws_kms_key.main.arn]
  }
  statement {
    # The one call AwsSettings::from_env makes; kms:Decrypt on the secret's key is above.
    sid       = "SealKey"
    actions   = ["secretsmanager:GetSecretValue"]
    resources = [local.seal_key_arn]
  }
  dynamic "statement" {
    for_each = contains(local.enqueues, each.key) ? [1] : []
    content {
      sid       = "Steps"
      actions   = ["sqs:SendMessage"]
      resources = [aws_sqs_queue.steps.arn]
    }
  }
  dynamic "statement" {
    for_each = contains(local.enqueues, each.key) ? [1] : []
    content {
      sid       = "Outcomes"
      actions   = ["sns:Publish"]
      resources = [aws_sns_topic.outcomes.arn]
    }
  }
  dynamic "statement" {
    for_each = each.key == "worker" ? [1] : []
    content {
      sid       = "Poll"
      actions   = ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueAttributes"]
      resources = [aws_sqs_queue.steps.arn]
    }
  }
  dynamic "statement" {
    for_each = each.key == "worker" && var.llm_key_secret_name != "" ? [1] : []
    content {
      sid       = "LlmKey"
      actions   = ["secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"]
      resources = ["arn:${data.aws_partition.current.partition}:secretsmanager:${local.region}:${local.account}:secret:${var.llm_key_secret_name}-??????"]
    }
  }
  dynamic "statement" {
    for_each = each.key == "worker" && var.search_key_secret_name != "" ? [1] : []
    content {
      sid       = "SearchKey"
      actions   = ["secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"]
      resources = ["arn:${data.aws_partition.current.partition}:secretsmanager:${local.region}:${local.account}:secret:${var.search_key_secret_name}-??????"]
    }
  }
  dynamic "statement" {
    for_each = each.key == "worker" && length(local.bedrock_ids) > 0 ? [1] : []
    content {
      sid       = "Bedrock"
      actions   = ["bedrock:InvokeModel"]
      resources = local.bedrock_resources
    }
  }
  dynamic "statement" {
    for_each = contains(local.async_functions, each.key) ? [1] : []
    content {
      sid       = "FailureDestination"
      actions   = ["sqs:SendMessage"]
      resources = [aws_sqs_queue.failed.arn]
    }
  }
}

resource "aws_iam_role_policy" "fn" {
  for_each = local.functions
  name     = "longrun-${each.key}"
  role     = aws_iam_role.fn[each.key].id
  policy   = data.aws_iam_policy_document.fn[each.key].json
}

resource "aws_lambda_function" "fn" {
  for_each = local.functions
  #checkov:skip=CKV_AWS_117:No VPC resources to reach; a VPC would add NAT cost to every LLM call.
  #checkov:skip=CKV_AWS_50:Tracing is off: traces cost per iteration; EMF metrics and JSON logs carry run_id.
  #checkov:skip=CKV_AWS_116:api and worker are invoked synchronously; notifier and sweeper use an on-failure destination.
  #checkov:skip=CKV_AWS_115:api and worker are bounded by API throttling and the SQS maximum concurrency.
  #checkov:skip=CKV_AWS_272:Code signing needs a signing profile per account; the zips are built by make package.
  function_name                  = "${local.name}-${each.key}"
  role                           = aws_iam_role.fn[each.key].arn
  runtime                        = "provided.al2023"
  architectures                  = ["arm64"]
  handler                        = "bootstrap"
  filename                       = "${var.lambda_dir}/${each.key}/bootstrap.zip"
  source_code_hash               = filebase64sha256("${var.lambda_dir}/${each.key}/bootstrap.zip")
  memory_size                    = each.value.memory
  timeout                        = each.value.timeout
  reserved_concurrent_executions = each.value.reserved
  kms_key_arn                    = aws_kms_key.main.arn

  environment {
    variables = merge(local.environment, each.key == "worker" ? local.worker_environment : {})
  }

  logging_config {
    log_format = "JSON"
    log_group  = aws_cloudwatch_log_group.fn[each.key].name
  }

  depends_on = [aws_iam_role_policy.fn]

  lifecycle {
    # A plan, not `terraform validate`, needs the zips: a caller's module validates unbuilt.
    precondition {
      condition     = fileexists("${var.lambda_dir}/${each.key}/bootstrap.zip")
      error_message = "No ${var.lambda_dir}/${each.key}/bootstrap.zip: run make package in the longrun checkout and set lambda_dir to its target/lambda (absolute, or relative to the directory terraform runs in)."
    }
  }
}

resource "aws_lambda_function_event_invoke_config" "async" {
  for_each                     = local.async_functions
  function_name                = aws_lambda_function.fn[each.key].function_name
  maximum_retry_attempts       = 2
  maximum_event_age_in_seconds = 3600
  destination_config {
    on_failure {
      destination = aws_sqs_queue.failed.arn
    }
  }
}

resource "aws_lambda_event_source_mapping" "steps" {
  event_source_arn        = aws_sqs_queue.steps.arn
  function_name           = aws_lambda_function.fn["worker"].arn
  batch_size              = 10
  function_response_types = ["ReportBatchItemFailures"]
  scaling_config {
    maximum_concurrency = var.worker_max_concurrency
  }
}

# --- sweeper schedule ------------------------------------------------------------------------

resource "aws_cloudwatch_event_rule" "sweep" {
  name                = "${local.name}-sweep"
  description         = "Recovers stalled runs, republishes missed outcomes, starts due schedules"
  schedule_expression = "rate(1 minute)"
}

resource "aws_cloudwatch_event_target" "sweep" {
  rule = aws_cloudwatch_event_rule.sweep.name
  arn  = aws_lambda_function.fn["sweeper"].arn
  retry_policy {
    maximum_retry_attempts       = 2
    maximum_event_age_in_seconds = 120
  }
  dead_letter_config {
    arn = aws_sqs_queue.failed.arn
  }
}

resource "aws_lambda_permission" "sweeper_from_events" {
  statement_id  = "AllowEventBridge"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.fn["sweeper"].function_name
  principal     = "events.amazonaws.com"
  source_arn    = aws_cloudwatch_event_rule.sweep.arn
}

# Runs started by events: an app puts `longrun.StartRun` on the default bus (or an EventBridge
# Scheduler target sends one); the sweeper starts the run once per event id.
resource "aws_cloudwatch_event_rule" "start_run" {
  name          = "${local.name}-start-run"
  description   = "Starts a run for each longrun.StartRun event"
  event_pattern = jsonencode({ "detail-type" = ["longrun.StartRun"] })
}

resource "aws_cloudwatch_event_target" "start_run" {
  rule = aws_cloudwatch_event_rule.start_run.name
  arn  = aws_lambda_function.fn["sweeper"].arn
  retry_policy {
    maximum_retry_attempts       = 2
    maximum_event_age_in_seconds = 3600
  }
  dead_letter_config {
    arn = aws_sqs_queue.failed.arn
  }
}

resource "aws_lambda_permission" "sweeper_from_start_run" {
  statement_id  = "AllowStartRunEvents"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.fn["sweeper"].function_name
  principal     = "events.amazonaws.com"
  source_arn    = aws_cloudwatch_event_rule.start_run.arn
}

# --- identity and API ------------------------------------------------------------------------

resource "aws_cognito_user_pool" "users" {
  count                    = local.create_pool ? 1 : 0
  name                     = "${local.name}-users"
  username_attributes      = ["email"]
  auto_verified_attributes = ["email"]
  mfa_configuration        = "ON"
  software_token_mfa_configuration {
    enabled = true
  }
  admin_create_user_config {
    allow_admin_create_user_only = true
  }
  password_policy {
    minimum_length    = 12
    require_lowercase = true
    require_uppercase = true
    require_numbers   = true
    require_symbols   = true
  }
  user_pool_add_ons {
    advanced_security_mode = "ENFORCED"
  }
}

resource "aws_cognito_user_pool_client" "console" {
  count                                = local.create_pool ? 1 : 0
  name                                 = "console"
  user_pool_id                         = aws_cognito_user_pool.users[0].id
  generate_secret                      = false
  explicit_auth_flows                  = ["ALLOW_USER_SRP_AUTH", "ALLOW_REFRESH_TOKEN_AUTH"]
  allowed_oauth_flows_user_pool_client = true
  allowed_oauth_flows                  = ["code"]
  allowed_oauth_scopes                 = ["openid", "email", "profile"]
  supported_identity_providers         = ["COGNITO"]
  # The console finishes the code + PKCE flow on /callback.
  callback_urls = ["${local.origin}/callback"]
  logout_urls   = [local.app_base_url]
}

resource "aws_apigatewayv2_api" "api" {
  name          = "${local.name}-api"
  description   = "longrun HTTP API"
  protocol_type = "HTTP"
  cors_configuration {
    allow_origins = [local.origin]
    allow_headers = ["authorization", "content-type", "last-event-id"]
    allow_methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
    max_age       = 3600
  }
}

resource "aws_apigatewayv2_authorizer" "jwt" {
  api_id           = aws_apigatewayv2_api.api.id
  name             = "jwt"
  authorizer_type  = "JWT"
  identity_sources = ["$request.header.Authorization"]
  jwt_configuration {
    issuer   = local.issuer
    audience = local.audience
  }
}

resource "aws_apigatewayv2_integration" "api" {
  api_id                 = aws_apigatewayv2_api.api.id
  integration_type       = "AWS_PROXY"
  integration_uri        = aws_lambda_function.fn["api"].invoke_arn
  payload_format_version = "2.0"
}

resource "aws_apigatewayv2_route" "v1" {
  api_id             = aws_apigatewayv2_api.api.id
  route_key          = "ANY /v1/{proxy+}"
  target             = "integrations/${aws_apigatewayv2_integration.api.id}"
  authorization_type = "JWT"
  authorizer_id      = aws_apigatewayv2_authorizer.jwt.id
}

# The MCP server (JSON-RPC over POST), behind the same JWT authorizer as /v1.
resource "aws_apigatewayv2_route" "mcp" {
  api_id             = aws_apigatewayv2_api.api.id
  route_key          = "POST /mcp"
  target             = "integrations/${aws_apigatewayv2_integration.api.id}"
  authorization_type = "JWT"
  authorizer_id      = aws_apigatewayv2_authorizer.jwt.id
}

resource "aws_apigatewayv2_route" "healthz" {
  #checkov:skip=CKV_AWS_309:The health check answers without auth for probes; it reads nothing.
  api_id             = aws_apigatewayv2_api.api.id
  route_key          = "GET /healthz"
  target             = "integrations/${aws_apigatewayv2_integration.api.id}"
  authorization_type = "NONE"
}

resource "aws_cloudwatch_log_group" "api_access" {
  name              = "/aws/apigateway/${local.name}-api"
  retention_in_days = local.log_retention
  kms_key_id        = aws_kms_key.main.arn
}

resource "aws_apigatewayv2_stage" "default" {
  api_id      = aws_apigatewayv2_api.api.id
  name        = "$default"
  auto_deploy = true
  default_route_settings {
    throttling_burst_limit = 200
    throttling_rate_limit  = 100
  }
  access_log_settings {
    destination_arn = aws_cloudwatch_log_group.api_access.arn
    format = jsonencode({
      requestId       = "$context.requestId"
      ip              = "$context.identity.sourceIp"
      user            = "$context.authorizer.claims.sub"
      method          = "$context.httpMethod"
      path            = "$context.path"
      status          = "$context.status"
      latencyMs       = "$context.responseLatency"
      error           = "$context.error.message"
      authorizerError = "$context.authorizer.error"
    })
  }
}

resource "aws_lambda_permission" "api_from_gateway" {
  statement_id  = "AllowApiGateway"
  action        = "lambda:InvokeFunction"
  function_name = aws_lambda_function.fn["api"].function_name
  principal     = "apigateway.amazonaws.com"
  source_arn    = "${aws_apigatewayv2_api.api.execution_arn}/*/*"
}

# --- alarms ----------------------------------------------------------------------------------

resource "aws_sns_topic" "alarms" {
  count             = var.alarm_email == "" ? 0 : 1
  name              = "${local.name}-alarms"
  kms_master_key_id = aws_kms_key.main.arn
}

resource "aws_sns_topic_subscription" "alarms" {
  count     = var.alarm_email == "" ? 0 : 1
  topic_arn = aws_sns_topic.alarms[0].arn
  protocol  = "email"
  endpoint  = var.alarm_email
}

locals {
  alarm_actions = var.alarm_email == "" ? [] : [aws_sns_topic.alarms[0].arn]
  alarms = {
    DeadLetters = {
      namespace  = "AWS/SQS", metric = "ApproximateNumberOfMessagesVisible", stat = "Maximum",
      dimensions = { QueueName = aws_sqs_queue.steps_dlq.name }, threshold = 0,
      what       = "A step message failed every delivery: a run is stuck until someone looks."
    }
    WorkerErrors = {
      namespace  = "AWS/Lambda", metric = "Errors", stat = "Sum",
      dimensions = { FunctionName = aws_lambda_function.fn["worker"].function_name }, threshold = 0,
      what       = "The worker failed invocations (panics, time-outs)."
    }
    OldestStep = {
      namespace  = "AWS/SQS", metric = "ApproximateAgeOfOldestMessage", stat = "Maximum",
      dimensions = { QueueName = aws_sqs_queue.steps.name }, threshold = local.visibility,
      what       = "A step has waited longer than one visibility timeout: workers are not keeping up."
    }
    WorkerThrottles = {
      namespace  = "AWS/Lambda", metric = "Throttles", stat = "Sum",
      dimensions = { FunctionName = aws_lambda_function.fn["worker"].function_name }, threshold = 0,
      what       = "Worker invocations were throttled (account concurrency)."
    }
    TableThrottles = {
      namespace  = "AWS/DynamoDB", metric = "WriteThrottleEvents", stat = "Sum",
      dimensions = { TableName = aws_dynamodb_table.runs.name }, threshold = 0,
      what       = "DynamoDB throttled writes."
    }
  }
}

resource "aws_cloudwatch_metric_alarm" "alarm" {
  for_each            = local.alarms
  alarm_name          = "${local.name}-${each.key}"
  alarm_description   = each.value.what
  namespace           = each.value.namespace
  metric_name         = each.value.metric
  statistic           = each.value.stat
  dimensions          = each.value.dimensions
  period              = 300
  evaluation_periods  = 1
  threshold           = each.value.threshold
  comparison_operator = "GreaterThanThreshold"
  treat_missing_data  = "notBreaching"
  alarm_actions       = local.alarm_actions
}
