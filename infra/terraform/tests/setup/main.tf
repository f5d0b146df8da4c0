# What `terraform test` plans the module with, made by the test's first run (an apply of this
# module, before the plans): under var.dir, an empty but valid zip (the 22-byte end-of-archive
# record) for each function, and a two-file console build. It needs only a POSIX shell's
# printf, so the same commands work in a fresh copy of the module and leave nothing to check in.

variable "dir" {
  description = "Where to write lambda/{api,worker,notifier,sweeper}/bootstrap.zip and console/."
  type        = string
}

resource "terraform_data" "fixtures" {
  input = var.dir

  provisioner "local-exec" {
    environment = { DIR = var.dir }
    command     = <<-EOT
      set -e
      for f in api worker notifier sweeper; do
        mkdir -p "$DIR/lambda/$f"
        printf 'PK\005\006\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000' > "$DIR/lambda/$f/bootstrap.zip"
      done
      mkdir -p "$DIR/console/assets"
      printf '<!doctype html><title>longrun</title>\n' > "$DIR/console/index.html"
      printf 'console.log("longrun");\n' > "$DIR/console/assets/app.js"
    EOT
  }
}

output "lambda_dir" {
  value = "${terraform_data.fixtures.output}/lambda"
}

output "console_dir" {
  value = "${terraform_data.fixtures.output}/console"
}
