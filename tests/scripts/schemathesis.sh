#!/usr/bin/env bash
# Property-based API testing with Schemathesis (PyPI) against the worker in
# workerd (`wrangler dev --local`), driven by the app's own OpenAPI document.
#
#   bash tests/scripts/schemathesis.sh            # build the worker if missing, then run
#   SCHEMATHESIS_MAX_EXAMPLES=200 bash tests/scripts/schemathesis.sh
#
# Installs Schemathesis into target/schemathesis-venv when it is missing.
# Fails on server errors (5xx other than the documented 503s) and on answers
# that break the document: undocumented status codes, content types or
# headers, and bodies that do not match their schema.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
export PATH="$HOME/.cargo/bin:$root/tests/node/node_modules/.bin:$PATH"

venv="$root/target/schemathesis-venv"
if [ ! -x "$venv/bin/st" ]; then
  echo "installing schemathesis into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "schemathesis>=4,<5"
fi
if [ ! -f functions/cloudflare/build/index.js ]; then
  bash tests/scripts/build-worker.sh
fi

work="$(mktemp -d)"
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill -- "-$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port="$(free_port)"
base="http://127.0.0.1:$port"
token="schemathesis-$(python3 -c 'import secrets; print(secrets.token_hex(12))')"

# The harness's transformation of wrangler.toml (tests/src/server.rs): the
# prebuilt worker, no build step.
sed -e "s|^main = \"functions/cloudflare/build/index.js\"|main = \"$root/functions/cloudflare/build/index.js\"|" \
    -e 's|^\[build\]$|[build_disabled]|' wrangler.toml > "$work/wrangler.toml"

(
  cd "$work"
  WRANGLER_SEND_METRICS=false AGENT_ZERO_PREBUILT=1 exec setsid wrangler dev --local --ip 127.0.0.1 --port "$port" \
    --config "$work/wrangler.toml" --persist-to "$work/state" --inspector-port "$(free_port)" \
    --var "AGENT_ZERO_CONTROL_PLANE_TOKENS:schemathesis:$token" \
    --var "AGENT_ZERO_CONTROL_PLANE_MODES:schemathesis:observe|suggest|fix|autonomous" \
    --var "AGENT_ZERO_CONTROL_PLANE_REPOSITORIES:acme/widgets" \
    --var "AGENT_ZERO_SANDBOX_PROVIDER:custom" --var "AGENT_ZERO_SANDBOX_URL:http://127.0.0.1:9" \
    --var "AGENT_ZERO_SANDBOX_TOKEN:schemathesis-unreached" --var "OPENAI_API_KEY:sk-schemathesis-unreached" \
    --var "GITHUB_WEBHOOK_SECRET:$token-webhook" \
    --var "GITLAB_WEBHOOK_SECRET:$token-gitlab" --var "GITEA_WEBHOOK_SECRET:$token-gitea" \
    --var "AGENT_ZERO_DASHBOARD_OAUTH_CLIENT_ID:Iv1.schemathesis" \
    --var "AGENT_ZERO_DASHBOARD_OAUTH_CLIENT_SECRET:schemathesis-oauth-unreached" \
    --var "AGENT_ZERO_DASHBOARD_SESSION_KEY:schemathesis-session-key-0123456789abcdef" \
    --var "AGENT_ZERO_DASHBOARD_USERS:octocat" \
    --var "AGENT_ZERO_RECEIPT_KEY:schemathesis:nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A" \
    --var "AGENT_ZERO_DASHBOARD_GITHUB_URL:http://127.0.0.1:9"
) > "$work/wrangler.log" 2>&1 &
pid=$!

for _ in $(seq 1 450); do
  if curl -fsS -o /dev/null "$base/api/v1/health" 2>/dev/null; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then cat "$work/wrangler.log" >&2; echo "wrangler dev exited" >&2; exit 1; fi
  sleep 0.2
done
curl -fsS -o /dev/null "$base/api/v1/health" || { cat "$work/wrangler.log" >&2; echo "the worker did not answer" >&2; exit 1; }

status=0
"$venv/bin/st" --no-color run "$base/api/v1/openapi.json" \
  --url "$base" \
  --header "Authorization: Bearer $token" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance \
  --phases examples,coverage,fuzzing \
  --max-examples "${SCHEMATHESIS_MAX_EXAMPLES:-25}" \
  --workers 1 \
  --request-timeout 30 || status=$?
if [ "$status" -ne 0 ]; then
  echo "--- wrangler log (tail) ---" >&2
  tail -n 40 "$work/wrangler.log" >&2
fi
exit "$status"
