#!/usr/bin/env bash
# Semantic search quality: for each corpus and its commit-derived query set, indexes with an
# embedding model (`epiphany index --model`) and scores the default hybrid ranking and
# `retrieve --mode semantic` with eval_retrieval.py (MRR, Recall@5/10, Hit@5, median time).
#
# The model is never part of the build or the tests; for the figures in docs/retrieval.md it was distilled
# from MiniLM-L6 with the `model2vec` Python package (benchmark-only, CPU):
#   python -c "from model2vec.distill import distill; \
#              distill(model_name='DIR/all-MiniLM-L6-v2', pca_dims=256).save_pretrained('m2v')"
#
# Usage: MODEL=DIR bench/semantic-quality.sh [CORPUS=QUERIES.jsonl]...
#        (default: the ripgrep development set, /tmp/corpora/ripgrep, see retrieval-quality.sh)
# Environment: MODEL (required), BENCH_DIR (default ../shared/bench), EPIPHANY_BIN (default:
# cargo build --release). Each corpus's `.epiphany/` is recreated.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
bench="${BENCH_DIR:-$repo/../shared/bench}"
[ -n "${MODEL:-}" ] || { echo "set MODEL to a model2vec model directory" >&2; exit 2; }
MODEL="$(cd "$MODEL" && pwd)"
[ -f "$bench/eval_retrieval.py" ] || { echo "no eval_retrieval.py in $bench (set BENCH_DIR)" >&2; exit 2; }
if [ -z "${EPIPHANY_BIN:-}" ]; then
    cargo build --release --quiet --manifest-path "$repo/Cargo.toml"
    EPIPHANY_BIN="$repo/target/release/epiphany"
fi
sets=("$@")
[ ${#sets[@]} -gt 0 ] || sets=("/tmp/corpora/ripgrep=$bench/ripgrep.queries.jsonl")

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# eval_retrieval.py runs `BIN -C CORPUS --json retrieve --limit 50 QUERY`; this one adds the mode.
printf '#!/bin/sh\nexec "%s" "$@" --mode semantic\n' "$EPIPHANY_BIN" > "$work/semantic"
chmod +x "$work/semantic"

for set in "${sets[@]}"; do
    corpus="${set%%=*}" queries="${set#*=}"
    (
        cd "$corpus"
        rm -rf .epiphany
        "$EPIPHANY_BIN" -q init
        "$EPIPHANY_BIN" index --model "$MODEL"
    )
    for ranking in hybrid semantic; do
        bin="$EPIPHANY_BIN"
        [ "$ranking" = semantic ] && bin="$work/semantic"
        result="$(python3 "$bench/eval_retrieval.py" --corpus "$corpus" --queries "$queries" \
            --rankers epiphany --epiphany-bin "$bin" | tail -1)"
        echo "$(basename "$corpus") $ranking: ${result#epiphany}"
    done
done
