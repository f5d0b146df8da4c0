# Sourced by scripts that run Lambda binaries under the local Runtime API (scripts/runtime_api.py)
# against the emulator: provisions a fresh stack, sets the function environment, and defines
# `invoke` and `sqs_event`. Needs AWS_ENDPOINT_URL (run through scripts/with-moto).
: "${AWS_ENDPOINT_URL:?run me through scripts/with-moto}"
py="$root/.venv/bin/python"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

eval "$(cargo run --quiet -p longrun-tests --bin provision -- "fn$$")"
export LONGRUN_MODELS="script:$root/examples/demo.json" LONGRUN_APP_BASE_URL=http://localhost:8080
export AWS_LAMBDA_FUNCTION_NAME=longrun AWS_LAMBDA_FUNCTION_VERSION='$LATEST'
export AWS_LAMBDA_FUNCTION_MEMORY_SIZE=128 AWS_LAMBDA_LOG_GROUP_NAME=/aws/lambda/longrun
export AWS_LAMBDA_LOG_STREAM_NAME=local RUST_LOG=warn

free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# invoke BINARY EVENT_FILE OUT [time]: one invocation under the runtime API, then stop the
# function. OUT gets the runtime API's line ({"response": …} or {"error": …}); $tmp/stderr.txt
# the function's log (and /usr/bin/time's summary with `time`). $RUNNER prefixes the binary
# (qemu for another architecture).
invoke() {
  local port; port=$(free_port)
  "$py" "$root/scripts/runtime_api.py" "$port" "$2" >"$3" &
  local api=$!
  sleep 0.3
  local timer=()
  [ "${4:-}" = time ] && timer=(/usr/bin/time -v)
  AWS_LAMBDA_RUNTIME_API="127.0.0.1:$port" "${timer[@]}" ${RUNNER:-} "$1" >/dev/null 2>"$tmp/stderr.txt" &
  local fn=$!
  wait "$api"
  pkill -TERM -P "$fn" 2>/dev/null || kill "$fn" 2>/dev/null || true
  wait "$fn" 2>/dev/null || true
}

# sqs_event OUT [N]: receives N (default 1) step messages the API enqueued and writes them as one
# SQS event, as the event source batches them.
sqs_event() {
  "$py" - "$LONGRUN_QUEUE_URL" "${2:-1}" >"$1" <<'PY'
import json, sys, boto3
q = boto3.client("sqs")
want, records = int(sys.argv[2]), []
for _ in range(50):
    if len(records) >= want:
        break
    got = q.receive_message(QueueUrl=sys.argv[1], MaxNumberOfMessages=min(10, want - len(records)),
                            AttributeNames=["All"]).get("Messages", [])
    for m in got:
        body = json.loads(m["Body"])
        records.append({
            "messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
            "attributes": {"ApproximateReceiveCount": "1", "MessageGroupId": body["run_id"]},
            "messageAttributes": {}, "md5OfBody": m["MD5OfBody"], "eventSource": "aws:sqs",
            "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:steps.fifo",
            "awsRegion": "us-east-1"})
if len(records) < want:
    sys.exit(f"received {len(records)} of {want} step messages")
print(json.dumps({"Records": records}))
PY
}
