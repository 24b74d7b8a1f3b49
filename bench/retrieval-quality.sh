#!/usr/bin/env bash
# Retrieval quality on the development set: 137 commit-derived queries on ripgrep's source
# (see ../shared/bench/README.md). Builds the release binary, extracts the ripgrep corpus at
# the set's snapshot commit, runs `epiphany init && epiphany index` there, and scores
# epiphany against the ripgrep baselines with eval_retrieval.py (MRR, Recall@5/10, Hit@5).
#
# Environment (all optional):
#   RIPGREP_GIT   a git directory with ripgrep's history (default: the local mirror, else a
#                 bare clone from GitHub into the corpus parent directory)
#   CORPUS        where to extract the corpus (default /tmp/corpora/ripgrep); never committed
#   BENCH_DIR     the shared benchmark directory (default ../shared/bench next to the repo)
#   EPIPHANY_BIN  binary to test (default: cargo build --release, target/release/epiphany)
#   RANKERS       rankers to score (default epiphany,rg-count,rg-bm25)
#   OUT           also write per-query results as JSON to this file
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
snapshot=cddb5f57f8fa3413a6210bdd3a8f687b7dac69b2
corpus="${CORPUS:-/tmp/corpora/ripgrep}"
bench="${BENCH_DIR:-$repo/../shared/bench}"
rankers="${RANKERS:-epiphany,rg-count,rg-bm25}"

command -v rg >/dev/null || { echo "ripgrep is required: apt-get install -y ripgrep" >&2; exit 2; }
[ -f "$bench/eval_retrieval.py" ] || { echo "no eval_retrieval.py in $bench (set BENCH_DIR)" >&2; exit 2; }

if [ -z "${EPIPHANY_BIN:-}" ]; then
    cargo build --release --quiet --manifest-path "$repo/Cargo.toml"
    EPIPHANY_BIN="$repo/target/release/epiphany"
fi

if [ ! -d "$corpus/crates" ]; then
    git_dir="${RIPGREP_GIT:-/work/.mirror/BurntSushi+ripgrep/repo}"
    if [ ! -d "$git_dir" ]; then
        git_dir="$(dirname "$corpus")/ripgrep.git"
        [ -d "$git_dir" ] || git clone --quiet --bare https://github.com/BurntSushi/ripgrep "$git_dir"
    fi
    mkdir -p "$corpus"
    git --git-dir="$git_dir" archive "$snapshot" | tar -x -C "$corpus"
fi

(
    cd "$corpus"
    rm -rf .epiphany
    "$EPIPHANY_BIN" -q init
    "$EPIPHANY_BIN" index
)

python3 "$bench/eval_retrieval.py" --corpus "$corpus" \
    --queries "$bench/ripgrep.queries.jsonl" --rankers "$rankers" \
    --epiphany-bin "$EPIPHANY_BIN" ${OUT:+--out "$OUT"}
