#!/usr/bin/env bash
# The code map's cost on a large source tree (issue 28), all whole-process timings (hyperfine,
# and bench/pairs.py for the full builds), ratios taken within one run:
#   1. `index --full` with parsing vs a baseline binary's (built before the parsers): from a
#      cold cache (no previous generation, every parsed file parsed) and warm (the previous
#      generation's outlines reused by content hash), RUNS interleaved rounds. Target: cold
#      <= 2x the baseline.
#   2. an incremental `index` after editing one file. Target: < 0.3 s.
#   3. `map` with an index vs `retrieve` with an index. Target: <= 2x.
#   4. `map` with no store and no index vs `rg` over the tree. Target: <= 3x.
# `freshness` on the benchmark state is bench/state-speed.sh's (give it the baseline binary).
#
# Usage: bench/code-map.sh BASELINE_BINARY [EPIPHANY_BINARY]
# Environment: CORPUS (default /tmp/corpora/cargo, made as bench/retrieval-speed.sh makes it),
#   WORDS (retrieve's query and rg's words), RUNS (default 10).
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
baseline="${1:?usage: bench/code-map.sh BASELINE_BINARY [EPIPHANY_BINARY]}"
bin="${2:-$repo/target/release/epiphany}"
words="${WORDS:-package registry dependency resolve}"
runs="${RUNS:-10}"
corpus="${CORPUS:-/tmp/corpora/cargo}"
for tool in rg hyperfine python3; do
    command -v "$tool" >/dev/null || { echo "$tool is required (apt-get install -y ripgrep hyperfine)" >&2; exit 2; }
done
[ -f "$corpus/Cargo.toml" ] || [ -n "${CORPUS:-}" ] || {
    echo "no corpus at $corpus: run bench/retrieval-speed.sh once to extract it" >&2; exit 2;
}
cd "$corpus"
edit="$(rg --files -t rust | sort | sed -n 1p)"
backup="$(mktemp)"
cp -p "$edit" "$backup"
out="$(mktemp -d)"
trap 'cp -p "$backup" "$edit"; rm -rf "$backup" "$out"' EXIT
rg_args=(-i -c)
for word in $words; do rg_args+=(-e "$word"); done

rm -rf .epiphany
"$bin" -q init
echo "corpus: $corpus ($(rg --files | wc -l) files, $(rg --files -t rust -t py -t js -t ts -t go -t java -t c -t cpp | xargs cat | wc -c) bytes in parsed languages)"

# Interleaved (bench/pairs.py): the cold and baseline builds of a round see the same load.
python3 "$repo/bench/pairs.py" "$runs" \
    - . "rm -rf .epiphany/cache/retrieval" \
    full-baseline . "$baseline -q index --full" \
    - . "rm -rf .epiphany/cache/retrieval" \
    full-cold . "$bin -q index --full" \
    full-warm . "$bin -q index --full" > "$out/full.tsv"
"$bin" -q index --full
hyperfine --style basic --runs "$runs" --export-json "$out/incremental.json" \
    --prepare "printf '\n// edited %s\n' \"\$(date +%s%N)\" >> '$edit'" \
    -n incremental-edit "$bin -q index"
"$bin" -q index
hyperfine --style basic -N --warmup 2 --runs "$runs" --export-json "$out/indexed.json" \
    -n map-indexed "$bin map" \
    -n retrieve-indexed "$bin retrieve '$words'"
mv .epiphany "$out/store"
hyperfine --style basic -N --warmup 2 --runs "$runs" --export-json "$out/noindex.json" \
    -n map-no-index "$bin map" \
    -n rg "rg ${rg_args[*]}" || true
"$bin" --json map | python3 -c 'import json,sys; r=json.load(sys.stdin); print("map without an index ranked", r["ranked_files"], "files, left out", r["left_out_files"])'
mv "$out/store" .epiphany

python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
m = {}
for line in open(f"{out}/full.tsv"):
    command, wall, cpu = line.split("\t")
    m[command] = float(wall)
    m[command + " (CPU)"] = float(cpu)
for name in ("incremental", "indexed", "noindex"):
    for result in json.load(open(f"{out}/{name}.json"))["results"]:
        m[result["command"]] = result["median"]
for command, median in m.items():
    print(f"{command:18s} median {median * 1000:8.1f} ms")
print(f"full cold / baseline  {m['full-cold'] / m['full-baseline']:6.2f}x (target <= 2)")
print(f"  in CPU time         {m['full-cold (CPU)'] / m['full-baseline (CPU)']:6.2f}x")
print(f"full warm / baseline  {m['full-warm'] / m['full-baseline']:6.2f}x")
print(f"incremental edit      {m['incremental-edit']:6.3f} s (target < 0.3 s)")
print(f"map / retrieve        {m['map-indexed'] / m['retrieve-indexed']:6.2f}x (target <= 2)")
print(f"map no index / rg     {m['map-no-index'] / m['rg']:6.2f}x (target <= 3)")
PY
