# longrun in an account that already has an identity provider and a queue of its own: the
# module runs behind that issuer's tokens, and the team's queue hears about completed runs.
#   terraform init && terraform apply -var completed_queue_arn=arn:aws:sqs:…
# The Terraform and provider versions are the module's (../../versions.tf).
terraform {
  required_providers {
    aws = {
      source = "hashicorp/aws"
    }
  }
}

provider "aws" {
  region = var.region
}

variable "region" {
  description = "Where to deploy."
  type        = string
  default     = "eu-west-1"
}

variable "completed_queue_arn" {
  description = "An SQS queue of yours that receives every completed run's outcome."
  type        = string
}

module "longrun" {
  source = "../.."

  stage                  = "team"
  app_base_url           = "https://app.example.com/longrun"
  jwt_issuer             = "https://login.example.com/"
  jwt_audience           = ["web-client"]
  models                 = "bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0"
  model_limits           = "bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0=concurrency:4,rpm:40"
  worker_max_concurrency = 10
  lambda_dir             = "${path.root}/../../../../target/lambda"
}

resource "aws_sns_topic_subscription" "completed" {
  topic_arn            = module.longrun.topic_arn
  protocol             = "sqs"
  endpoint             = var.completed_queue_arn
  raw_message_delivery = true
  filter_policy        = jsonencode({ status = ["completed"] })
}

output "api_url" {
  description = "LONGRUN_API_URL for the CLI and the TypeScript client."
  value       = module.longrun.api_url
}

output "start_run_target" {
  description = "Send longrun.StartRun events to this function (an EventBridge rule or Scheduler target)."
  value       = module.longrun.function_arns["sweeper"]
}
