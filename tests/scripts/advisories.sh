#!/usr/bin/env bash
# The advisory check, offline: cargo-deny (installed by install-tools.sh)
# against the RustSec snapshot vendored in tests/advisory-db, over what ships:
# the worker's graph (wasm32-unknown-unknown) and the Spin component's
# (wasm32-wasip2), normal dependencies only. Fails on an open advisory
# (vulnerability, unmaintained, unsound) unless deny.toml ignores it with a
# reason; and if the worker links the `rsa` crate at all (it signs with
# WebCrypto), or the Spin component links an `rsa` before 0.10, whose
# private-key arithmetic (num-bigint-dig) is not constant-time
# (RUSTSEC-2023-0071; deny.toml says why 0.10 is accepted).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
export PATH="$HOME/.cargo/bin:$PATH"

say() { echo "advisories: $*" >&2; }

# cargo-deny opens a database as a git work tree at
# <db-path>/<last URL segment>-<xxhash64 of the URL> (db-path and the URL are
# in deny.toml); with --offline it reads it as it is, fetching nothing.
db="target/advisory-dbs/advisory-db-3157b0e258782691"
commit="$(sed -n 's/^- Commit: `\([0-9a-f]\{40\}\)`$/\1/p' tests/advisory-db/README.md)"
committed="$(sed -n 's/^- Committed: \(.*\)$/\1/p' tests/advisory-db/README.md)"
if [ -z "$commit" ] || [ -z "$committed" ]; then
  say "FAIL: tests/advisory-db/README.md names no source commit and date"
  exit 1
fi
rm -rf "$db"
mkdir -p "$db"
cp -R tests/advisory-db/crates "$db/crates"
git -C "$db" init -q
git -C "$db" add -A
GIT_AUTHOR_DATE="$committed" GIT_COMMITTER_DATE="$committed" \
  git -C "$db" -c user.name=rustsec -c user.email=rustsec@invalid -c commit.gpgsign=false \
  commit -q -m "rustsec/advisory-db $commit"
age_days=$(( ($(date +%s) - $(date -d "$committed" +%s)) / 86400 ))
say "RustSec snapshot $commit ($committed, $age_days days old)"
if [ "$age_days" -gt 90 ]; then
  say "WARN: the snapshot is over 90 days old: refresh it (tests/advisory-db/README.md)"
fi

# The crates the graphs name (from crates.io), so the rest runs offline.
cargo fetch --locked -q
for shipped in agent-zero-cloudflare:wasm32-unknown-unknown agent-zero-spin:wasm32-wasip2; do
  graph="$(cargo tree --offline --locked -q -p "${shipped%%:*}" --target "${shipped#*:}" -e normal --prefix none)"
  if [ "${shipped%%:*}" = agent-zero-cloudflare ] && grep -q '^rsa v' <<<"$graph"; then
    say "FAIL: the worker links the rsa crate; it signs RS256 with WebCrypto (functions/cloudflare/src/signer.rs)"
    exit 1
  fi
  if grep -Eq '^(rsa v0\.[0-9]\.|num-bigint-dig v)' <<<"$graph"; then
    say "FAIL: ${shipped%%:*} links an rsa before 0.10 (RUSTSEC-2023-0071: not constant-time)"
    exit 1
  fi
done

for shipped in functions/cloudflare functions/spin; do
  say "cargo deny check advisories ($shipped)"
  cargo deny --offline --log-level error --config deny.toml --manifest-path "$shipped/Cargo.toml" \
    check advisories
done
say "ok"
