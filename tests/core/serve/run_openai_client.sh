#!/usr/bin/env bash
# The OpenAI client test: starts `forja-cli serve` on a free port with an API key, runs the client script
# against it, then stops the server with SIGTERM and checks it shut down cleanly.
# run_openai_client.sh <forja-cli> <model-dir> <dataset.jsonl (its questions)> <work-dir (where npm_ci.sh installed
# the client)>
set -euo pipefail
cli=$1 model=$2 dataset=$3 work=$4
if ! command -v node >/dev/null; then
  echo "node is needed for the OpenAI client test (Debian: apt-get install nodejs npm)" >&2
  exit 1
fi
[[ -d "$work/node_modules/openai" ]] || { echo "the openai package is not installed in $work (npm_ci.sh)" >&2; exit 1; }
log=$work/serve.log
key=sk-forja-client-test
"$cli" serve "$model" --port 0 --device cpu --api-key "$key" >"$log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
# The server prints its URL once it listens (the model loads first); give up if it exits instead.
url=""
for _ in $(seq 1 600); do
  url=$(sed -nE 's|.* at (http://[^ ]+/v1) .*|\1|p' "$log" | head -1)
  [[ -n "$url" ]] && break
  kill -0 "$pid" 2>/dev/null || { echo "forja-cli serve exited before listening:" >&2; cat "$log" >&2; exit 1; }
  sleep 0.5
done
[[ -n "$url" ]] || { echo "forja-cli serve printed no URL:" >&2; cat "$log" >&2; exit 1; }
echo "server: $url"
status=0
(cd "$work" && node check_openai_client.mjs "$url" "$key" model "$dataset") || status=$?
kill -TERM "$pid"
serve_status=0
wait "$pid" || serve_status=$?
trap - EXIT
cat "$log"
if [[ $serve_status -ne 0 ]] || ! grep -q '^stopped$' "$log"; then
  echo "forja-cli serve did not shut down cleanly on SIGTERM (exit $serve_status)" >&2
  exit 1
fi
exit $status
