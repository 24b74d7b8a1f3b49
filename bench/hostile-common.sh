# The preamble bench/hostile-repo.sh and bench/hostile-memory.sh share, sourced after
# `set -euo pipefail`: GNU time, the binary (EPIPHANY_BIN, else a release build), the
# address-space limit (LIMIT_KB, default 4 GiB), a work directory removed on exit, and
# `git_quiet`. Sets `repo`, `limit`, `bin` and `work`.
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
limit="${LIMIT_KB:-4194304}"
command -v /usr/bin/time >/dev/null || { echo "GNU time is required (apt-get install -y time)" >&2; exit 2; }
if [ -z "${EPIPHANY_BIN:-}" ]; then
    cargo build --release --locked --quiet --manifest-path "$repo/Cargo.toml"
    EPIPHANY_BIN="$repo/target/release/epiphany"
fi
bin="$EPIPHANY_BIN"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

git_quiet() { git -c user.name=bench -c user.email=bench@example.com "$@" >/dev/null 2>&1; }
