output "api_url" {
  description = "Base URL of the HTTP API (LONGRUN_API_URL for the CLI)."
  value       = aws_apigatewayv2_api.api.api_endpoint
}

output "api_id" {
  description = "The HTTP API's id, to add routes or a custom domain."
  value       = aws_apigatewayv2_api.api.id
}

output "table_name" {
  description = "The DynamoDB table holding runs, events, docs and schedules."
  value       = aws_dynamodb_table.runs.name
}

output "table_arn" {
  description = "The table's ARN, to grant your own readers."
  value       = aws_dynamodb_table.runs.arn
}

output "queue_url" {
  description = "The FIFO step queue (one message per iteration)."
  value       = aws_sqs_queue.steps.url
}

output "dead_letter_queue_url" {
  description = "Steps that failed every delivery; the DeadLetters alarm watches it."
  value       = aws_sqs_queue.steps_dlq.url
}

output "topic_arn" {
  description = "The outcome topic: subscribe your own consumers, filtering on the status message attribute."
  value       = aws_sns_topic.outcomes.arn
}

output "kms_key_arn" {
  description = "The key the table, queues, topic and logs are encrypted with; consumers of the topic need kms:Decrypt on it."
  value       = aws_kms_key.main.arn
}

output "seal_key_secret_arn" {
  description = "The secret holding the key that seals registered tool, MCP and webhook secrets in the table (LONGRUN_SEAL_KEY_SECRET); retained on destroy."
  value       = local.seal_key_arn
}

output "function_names" {
  description = "The four functions by role: api, worker, notifier, sweeper."
  value       = { for k, f in aws_lambda_function.fn : k => f.function_name }
}

output "function_arns" {
  description = "The four functions' ARNs by role; target the sweeper with longrun.StartRun events."
  value       = { for k, f in aws_lambda_function.fn : k => f.arn }
}

output "user_pool_id" {
  description = "The Cognito user pool the module created, when jwt_issuer is empty."
  value       = local.create_pool ? aws_cognito_user_pool.users[0].id : null
}

output "user_pool_client_id" {
  description = "The console's client id in that pool."
  value       = local.create_pool ? aws_cognito_user_pool_client.console[0].id : null
}

output "console_url" {
  description = "The hosted web console, when console_dir is set."
  value       = local.host_console ? local.console_url : null
}
