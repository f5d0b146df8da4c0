# The web console as static files (the CDK app's ConsoleSite): a private bucket read only by
# CloudFront through origin access control, unknown paths answered with index.html so deep links
# open the app, security headers on every response, and a config.json pointing at this API.
# Off unless var.console_dir names a console build (web/dist).

locals {
  host_console = var.console_dir != ""
  console_files = local.host_console ? {
    for f in fileset(var.console_dir, "**") : f => f if f != "config.json"
  } : {}
  content_types = {
    html = "text/html; charset=utf-8", js = "text/javascript; charset=utf-8", css = "text/css; charset=utf-8",
    json = "application/json", svg = "image/svg+xml", png = "image/png", ico = "image/x-icon", txt = "text/plain; charset=utf-8",
  }
  sign_in_origins = local.create_pool ? [
    "https://cognito-idp.${local.region}.amazonaws.com", "https://*.auth.${local.region}.amazoncognito.com",
  ] : [regex("^(https?://[^/]+)", var.jwt_issuer)[0]]
  console_url  = local.host_console ? "https://${aws_cloudfront_distribution.console[0].domain_name}" : ""
  app_base_url = var.app_base_url != "" ? var.app_base_url : local.console_url
}

resource "aws_s3_bucket" "console" {
  #checkov:skip=CKV_AWS_144:Static files rebuilt from the repository on every deploy; replication adds nothing.
  #checkov:skip=CKV_AWS_145:CloudFront reads it through OAC; SSE-S3 avoids a KMS grant for CloudFront on every request.
  #checkov:skip=CKV2_AWS_62:Nothing reacts to uploads.
  #checkov:skip=CKV2_AWS_61:Old versions are the rollback path; deploys overwrite the same names.
  #checkov:skip=CKV_AWS_18:Requests are logged by CloudFront, the only reader.
  count         = local.host_console ? 1 : 0
  bucket_prefix = "${local.name}-console-"
  force_destroy = !local.prod
}

resource "aws_s3_bucket_public_access_block" "console" {
  count                   = local.host_console ? 1 : 0
  bucket                  = aws_s3_bucket.console[0].id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_versioning" "console" {
  count  = local.host_console ? 1 : 0
  bucket = aws_s3_bucket.console[0].id
  versioning_configuration {
    status = "Enabled"
  }
}

resource "aws_s3_bucket_server_side_encryption_configuration" "console" {
  count  = local.host_console ? 1 : 0
  bucket = aws_s3_bucket.console[0].id
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm = "AES256"
    }
  }
}

data "aws_iam_policy_document" "console_bucket" {
  count = local.host_console ? 1 : 0
  statement {
    sid       = "CloudFrontReads"
    actions   = ["s3:GetObject"]
    resources = ["${aws_s3_bucket.console[0].arn}/*"]
    principals {
      type        = "Service"
      identifiers = ["cloudfront.amazonaws.com"]
    }
    condition {
      test     = "StringEquals"
      variable = "AWS:SourceArn"
      values   = [aws_cloudfront_distribution.console[0].arn]
    }
  }
  statement {
    sid       = "TlsOnly"
    effect    = "Deny"
    actions   = ["s3:*"]
    resources = [aws_s3_bucket.console[0].arn, "${aws_s3_bucket.console[0].arn}/*"]
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

resource "aws_s3_bucket_policy" "console" {
  count  = local.host_console ? 1 : 0
  bucket = aws_s3_bucket.console[0].id
  policy = data.aws_iam_policy_document.console_bucket[0].json
}

resource "aws_cloudfront_origin_access_control" "console" {
  count                             = local.host_console ? 1 : 0
  name                              = "${local.name}-console"
  origin_access_control_origin_type = "s3"
  signing_behavior                  = "always"
  signing_protocol                  = "sigv4"
}

resource "aws_cloudfront_response_headers_policy" "console" {
  #checkov:skip=CKV_AWS_259:HSTS is sent (1 year, subdomains); preload is for the owner of a custom domain to decide.
  count = local.host_console ? 1 : 0
  name  = "${local.name}-console"
  security_headers_config {
    content_security_policy {
      content_security_policy = join("; ", [
        "default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:",
        "connect-src 'self' ${join(" ", concat(["https://*.execute-api.${local.region}.amazonaws.com"], local.sign_in_origins))}",
        "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'",
      ])
      override = true
    }
    strict_transport_security {
      access_control_max_age_sec = 31536000
      include_subdomains         = true
      override                   = true
    }
    content_type_options {
      override = true
    }
    frame_options {
      frame_option = "DENY"
      override     = true
    }
    referrer_policy {
      referrer_policy = "no-referrer"
      override        = true
    }
  }
}

data "aws_cloudfront_cache_policy" "optimized" {
  count = local.host_console ? 1 : 0
  name  = "Managed-CachingOptimized"
}

resource "aws_cloudfront_distribution" "console" {
  #checkov:skip=CKV_AWS_68:Public static files; attach a WAF web ACL where policy requires one.
  #checkov:skip=CKV2_AWS_47:No WAF (see CKV_AWS_68); the files are static and the API checks JWTs.
  #checkov:skip=CKV_AWS_174:The default *.cloudfront.net certificate fixes the TLS policy; a custom domain sets TLSv1.2_2021.
  #checkov:skip=CKV2_AWS_42:A custom domain and certificate are the deployer's; the default one is used until then.
  #checkov:skip=CKV_AWS_310:One origin: the bucket. Failover would need a replica, see CKV_AWS_144.
  #checkov:skip=CKV_AWS_86:Access logs need an ACL-enabled bucket; CloudFront metrics cover a static site.
  #checkov:skip=CKV_AWS_374:The console is for signed-in users anywhere; the API does the authorization.
  count               = local.host_console ? 1 : 0
  enabled             = true
  comment             = "longrun ${var.stage} console"
  default_root_object = "index.html"
  http_version        = "http2and3"
  origin {
    origin_id                = "files"
    domain_name              = aws_s3_bucket.console[0].bucket_regional_domain_name
    origin_access_control_id = aws_cloudfront_origin_access_control.console[0].id
  }
  default_cache_behavior {
    target_origin_id           = "files"
    viewer_protocol_policy     = "redirect-to-https"
    allowed_methods            = ["GET", "HEAD"]
    cached_methods             = ["GET", "HEAD"]
    compress                   = true
    cache_policy_id            = data.aws_cloudfront_cache_policy.optimized[0].id
    response_headers_policy_id = aws_cloudfront_response_headers_policy.console[0].id
  }
  # A deep link (/runs/{id}) is no object in the bucket: serve the app, which routes it.
  dynamic "custom_error_response" {
    for_each = [403, 404]
    content {
      error_code            = custom_error_response.value
      response_code         = 200
      response_page_path    = "/index.html"
      error_caching_min_ttl = 0
    }
  }
  restrictions {
    geo_restriction {
      restriction_type = "none"
    }
  }
  viewer_certificate {
    cloudfront_default_certificate = true
  }
}

resource "aws_s3_object" "console" {
  for_each      = local.console_files
  bucket        = aws_s3_bucket.console[0].id
  key           = each.value
  source        = "${var.console_dir}/${each.value}"
  etag          = filemd5("${var.console_dir}/${each.value}")
  content_type  = lookup(local.content_types, reverse(split(".", each.value))[0], "application/octet-stream")
  cache_control = startswith(each.value, "assets/") ? "public, max-age=31536000, immutable" : "no-cache"
}

# What the console reads at start-up (web/src/config.ts): API Gateway does not stream, so it
# long-polls; sign-in is authorization code + PKCE against the issuer.
resource "aws_s3_object" "console_config" {
  count         = local.host_console ? 1 : 0
  bucket        = aws_s3_bucket.console[0].id
  key           = "config.json"
  content_type  = "application/json"
  cache_control = "no-cache"
  content = jsonencode({
    apiUrl = aws_apigatewayv2_api.api.api_endpoint
    live   = "poll"
    auth = {
      mode = "oidc", issuer = local.issuer, clientId = local.audience[0], scopes = "openid email", tokenType = "access_token"
    }
  })
}

resource "aws_cognito_user_pool_domain" "sign_in" {
  count        = local.create_pool ? 1 : 0
  domain       = "${local.name}-${local.account}"
  user_pool_id = aws_cognito_user_pool.users[0].id
}
