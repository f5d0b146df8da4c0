variable "stage" {
  description = "dev, prod, ...: part of every resource name; prod keeps data on destroy."
  type        = string
  default     = "dev"
}

variable "app_base_url" {
  description = "Where the web console lives; deep links, CORS and the sign-in callback use it. Empty: the hosted console's CloudFront URL."
  type        = string
  default     = ""
  validation {
    condition     = var.app_base_url != "" || var.console_dir != ""
    error_message = "Set app_base_url, or console_dir to host the console (its CloudFront URL is then the base URL)."
  }
}

variable "console_dir" {
  description = "A console build (web/dist, from make web) to host on S3 + CloudFront; empty hosts none."
  type        = string
  default     = ""
}

variable "jwt_issuer" {
  description = "OIDC issuer URL of an existing identity provider; empty creates a Cognito user pool."
  type        = string
  default     = ""
}

variable "jwt_audience" {
  description = "Accepted aud values (client ids) for jwt_issuer."
  type        = list(string)
  default     = []
}

variable "models" {
  description = "LONGRUN_MODELS: comma-separated provider:model, the first is the default."
  type        = string
  default     = "openai:gpt-4.1-mini"
}

variable "openai_base_url" {
  description = "An OpenAI-compatible base URL, when not OpenAI itself."
  type        = string
  default     = ""
}

variable "llm_key_secret_name" {
  description = "Secrets Manager secret whose string is the LLM provider's API key."
  type        = string
  default     = ""
}

# No default: a path in a variable's default is read from the directory terraform runs in, not
# from this module's (which `terraform init` copies under .terraform/modules when the source is
# an absolute path or a git URL), so no default could find the zips from a caller's root module.
variable "lambda_dir" {
  description = "Where make package put the functions: {api,worker,notifier,sweeper}/bootstrap.zip (target/lambda of the longrun checkout). Absolute, or relative to the directory terraform runs in."
  type        = string
}

variable "alarm_email" {
  description = "Email address for alarm notifications; no alarm topic without it."
  type        = string
  default     = ""
}

variable "worker_max_concurrency" {
  description = "Upper bound of concurrent worker invocations; with the batch of 10, about ten times as many iterations are in flight."
  type        = number
  default     = 100
}

variable "active_run_limit" {
  description = "Runs one user may have active at once."
  type        = number
  default     = 3
}

variable "model_limits" {
  description = "Per-model capacity of one worker environment, MODEL=concurrency:N,rpm:N,tpm:N;... (LONGRUN_MODEL_LIMITS): a provider quota divided by worker_max_concurrency. Empty: unlimited."
  type        = string
  default     = ""
}

variable "search_provider" {
  description = "The web_search tool's provider (tavily, brave or exa); empty: no web search."
  type        = string
  default     = ""
  validation {
    condition     = contains(["", "tavily", "brave", "exa"], var.search_provider)
    error_message = "search_provider must be tavily, brave, exa or empty."
  }
}

variable "search_key_secret_name" {
  description = "Secrets Manager secret whose string is the search provider's key; only the worker reads it."
  type        = string
  default     = ""
}
