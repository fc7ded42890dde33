#!/usr/bin/env bash
# Runs Agent Zero Edge locally on Cloudflare's runtime (workerd via
# `wrangler dev`) with local KV persisted under .wrangler/state, on
# http://127.0.0.1:8787: both workers in one `wrangler dev`, the front
# worker (wrangler.toml: the routes, the cron) and the tick worker
# (wrangler.ticks.toml), sharing the local KV, queue and Durable Objects.
# Installs what it needs first.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
bash tests/scripts/install-tools.sh worker
if [ ! -f .dev.vars ]; then
  cp .dev.vars.example .dev.vars
  echo "dev: created .dev.vars from .dev.vars.example (edit it for real secrets)" >&2
fi
export PATH="$root/tests/node/node_modules/.bin:$PATH"
export WRANGLER_SEND_METRICS=false
exec wrangler dev -c wrangler.toml -c wrangler.ticks.toml --local --ip 127.0.0.1 --port "${PORT:-8787}" \
  --persist-to .wrangler/state "$@"
