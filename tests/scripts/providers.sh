#!/usr/bin/env bash
# Sourced by build-worker.sh and build-spin.sh. `provider_features [ROLE]`
# turns AGENT_ZERO_PROVIDERS (provider names, separated by spaces or commas:
# `e2b anthropic`) into cargo's feature arguments, one per line, so a build
# carries only the adapters its deployment calls (docs/configuration.md, "Building only the
# providers you use"). Unset or blank: no arguments, every provider (the
# default features). An unknown name, or a list without a sandbox provider
# or without a model provider, is an error naming what to fix. With a ROLE
# (`front`, `ticks`: the worker or Spin component of one role,
# docs/architecture.md), the arguments always name the role's feature and the
# providers, every one when the list is unset or blank.
ALL_PROVIDER_FEATURES="sandbox-custom,sandbox-e2b,sandbox-daytona,sandbox-vercel,sandbox-cloudflare,model-openai,model-anthropic,model-google"

provider_features() {
  local role="${1:-}" list="${AGENT_ZERO_PROVIDERS:-}" name features="" sandbox=0 model=0
  case "$role" in
    "" | front | ticks) ;;
    *)
      echo "provider_features: unknown role \`$role\` (front or ticks)" >&2
      return 1
      ;;
  esac
  list="${list//,/ }"
  if [ -z "${list// /}" ]; then
    if [ -n "$role" ]; then
      printf '%s\n' --no-default-features --features "$role,$ALL_PROVIDER_FEATURES"
    fi
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
  if [ -n "$role" ]; then
    features=",$role$features"
  fi
  printf '%s\n' --no-default-features --features "${features#,}"
}
