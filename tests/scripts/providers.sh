#!/usr/bin/env bash
# Sourced by build-worker.sh and build-spin.sh. `provider_features` turns
# AGENT_ZERO_PROVIDERS (provider names, separated by spaces or commas:
# `e2b anthropic`) into cargo's feature arguments, one per line, so a build
# carries only the adapters its deployment calls (README, "Building only the
# providers you use"). Unset or blank: no arguments, every provider (the
# default features). An unknown name, or a list without a sandbox provider
# or without a model provider, is an error naming what to fix.
provider_features() {
  local list="${AGENT_ZERO_PROVIDERS:-}" name features="" sandbox=0 model=0
  list="${list//,/ }"
  if [ -z "${list// /}" ]; then
    return 0
  fi
  for name in $list; do
    case "$name" in
      custom | e2b | daytona | vercel | cloudflare)
        features="$features,sandbox-$name"
        sandbox=1
        ;;
      # One adapter speaks for the three OpenAI-style APIs.
      openai | ai-gateway | openai-compatible)
        features="$features,model-openai"
        model=1
        ;;
      anthropic | google)
        features="$features,model-$name"
        model=1
        ;;
      *)
        echo "AGENT_ZERO_PROVIDERS: unknown provider \`$name\`; sandbox providers: custom, e2b, daytona, vercel, cloudflare; model providers: openai, ai-gateway, openai-compatible, anthropic, google" >&2
        return 1
        ;;
    esac
  done
  if [ "$sandbox" = 0 ]; then
    echo "AGENT_ZERO_PROVIDERS names no sandbox provider (custom, e2b, daytona, vercel or cloudflare): a task cannot run without one" >&2
    return 1
  fi
  if [ "$model" = 0 ]; then
    echo "AGENT_ZERO_PROVIDERS names no model provider (openai, ai-gateway, openai-compatible, anthropic or google): a task cannot run without one" >&2
    return 1
  fi
  printf '%s\n' --no-default-features --features "${features#,}"
}
