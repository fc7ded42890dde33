#!/usr/bin/env bash
# Checks tests/scripts/providers.sh: AGENT_ZERO_PROVIDERS to cargo features,
# and the refusals. Run by test.sh.
set -uo pipefail
. "$(dirname "$0")/providers.sh"
failed=0
checks=0

expect() {
  local list="$1" want="$2" role="${3:-}" got
  checks=$((checks + 1))
  got="$(AGENT_ZERO_PROVIDERS="$list" provider_features $role 2>/dev/null | tr '\n' ' ')"
  if [ "$got" != "$want" ]; then
    echo "FAIL: AGENT_ZERO_PROVIDERS='$list' (role '$role') gave '$got', expected '$want'" >&2
    failed=1
  fi
}

refused() {
  local list="$1" says="$2" err
  checks=$((checks + 1))
  if err="$(AGENT_ZERO_PROVIDERS="$list" provider_features 2>&1 >/dev/null)"; then
    echo "FAIL: AGENT_ZERO_PROVIDERS='$list' was accepted" >&2
    failed=1
  elif [[ "$err" != *"$says"* ]]; then
    echo "FAIL: AGENT_ZERO_PROVIDERS='$list' said '$err', expected it to say '$says'" >&2
    failed=1
  fi
}

expect "" ""
expect " , " ""
expect "e2b anthropic" "--no-default-features --features sandbox-e2b,model-anthropic "
expect "vercel,ai-gateway" "--no-default-features --features sandbox-vercel,model-openai "
expect "custom, daytona openai-compatible,google" \
  "--no-default-features --features sandbox-custom,sandbox-daytona,model-openai,model-google "
# A role's build names its feature, and every provider when none is listed.
expect "" "--no-default-features --features front,$ALL_PROVIDER_FEATURES " front
expect " " "--no-default-features --features ticks,$ALL_PROVIDER_FEATURES " ticks
expect "e2b anthropic" "--no-default-features --features ticks,sandbox-e2b,model-anthropic " ticks
checks=$((checks + 1))
if err="$(provider_features both 2>&1 >/dev/null)" || [[ "$err" != *"unknown role \`both\`"* ]]; then
  echo "FAIL: the role \`both\` was not refused by name: '$err'" >&2
  failed=1
fi
# The list a role's build takes when none is named is each crate's default
# providers: the default features without the roles.
for manifest in functions/cloudflare/Cargo.toml functions/spin/Cargo.toml; do
  checks=$((checks + 1))
  defaults="$(awk '/^default = \[/ { on = 1; next } on && /^\]/ { exit } on { gsub(/[", ]/, ""); print }' \
    "$(dirname "$0")/../../$manifest" | grep -vx 'front\|ticks' | paste -sd, -)"
  if [ "$defaults" != "$ALL_PROVIDER_FEATURES" ]; then
    echo "FAIL: $manifest's default providers are '$defaults', providers.sh's '$ALL_PROVIDER_FEATURES'" >&2
    failed=1
  fi
done
refused "e2b docker" "unknown provider \`docker\`"
refused "E2B anthropic" "unknown provider \`E2B\`"
refused "anthropic" "names no sandbox provider"
refused "cloudflare" "names no model provider"

if [ "$failed" = 0 ]; then
  echo "test result: ok. $checks passed; 0 failed; 0 ignored (providers_test.sh)"
else
  echo "test result: FAILED. providers_test.sh" >&2
fi
exit "$failed"
