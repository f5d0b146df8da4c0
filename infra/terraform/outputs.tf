output "api_url" {
  description = "Base URL of the HTTP API (LONGRUN_API_URL for the CLI)."
  value       = aws_apigatewayv2_api.api.api_endpoint
}

output "table_name" {
  value = aws_dynamodb_table.runs.name
}

output "queue_url" {
  value = aws_sqs_queue.steps.url
}

output "topic_arn" {
  value = aws_sns_topic.outcomes.arn
}

output "user_pool_id" {
  value = local.create_pool ? aws_cognito_user_pool.users[0].id : null
}

output "user_pool_client_id" {
  value = local.create_pool ? aws_cognito_user_pool_client.console[0].id : null
}

output "console_url" {
  description = "The hosted web console, when console_dir is set."
  value       = local.host_console ? local.console_url : null
}
