#!/usr/bin/env bash
# Retrieval speed on a large source tree. Whole-process timings; the ratios compare like with
# like on the same machine state:
#   1. `epiphany retrieve "w1 w2 ..."` with a fresh index vs `rg -i -c -e w1 -e w2 ...`
#      (one hyperfine run)
#   2. a full `epiphany index --full`
#   3. an incremental `epiphany index` after editing one file (and after only touching it)
#   4. `epiphany retrieve` with no store and no index (the streaming query-time search) vs rg,
#      interleaved: each round runs one, then the other, so a busy moment of a shared machine
#      falls on both alike
# Prints the medians and the ratios against the targets (indexed retrieve <= 0.5x rg on a
# 30 MB tree and <= 1x on a 3 MB tree, no-index retrieve <= 2x rg, full index <= 5 s,
# incremental <= 0.3 s).
#
# Environment (all optional):
#   CORPUS        directory to measure (default: rust-lang/cargo at a fixed commit, extracted
#                 to /tmp/corpora/cargo; the original design was sized on openai/codex's
#                 codex-rs, about 3,600 files / 30 MB: pass its path to measure that instead)
#   CARGO_GIT     a git directory with rust-lang/cargo's history (default: the local mirror,
#                 else a bare clone from GitHub)
#   WORDS         the query words (default: "package registry dependency resolve")
#   EDIT_FILE     the file to edit for the incremental run, relative to CORPUS
#   EPIPHANY_BIN  binary to test (default: cargo build --release, target/release/epiphany)
#   RUNS          runs per query benchmark (default 30)
#   NO_INDEX_ONLY set to 1 to measure only the no-index search against rg (step 4): no store
#                 is made, and a store the corpus has is moved aside for the run
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
cargo_commit=af373f761aa4e42b093c2e453078fd73c8ce54dd
words="${WORDS:-package registry dependency resolve}"
runs="${RUNS:-30}"

for tool in rg hyperfine python3; do
    command -v "$tool" >/dev/null || { echo "$tool is required (apt-get install -y ripgrep hyperfine)" >&2; exit 2; }
done

if [ -z "${EPIPHANY_BIN:-}" ]; then
    cargo build --release --quiet --manifest-path "$repo/Cargo.toml"
    EPIPHANY_BIN="$repo/target/release/epiphany"
fi

corpus="${CORPUS:-/tmp/corpora/cargo}"
if [ -z "${CORPUS:-}" ] && [ ! -f "$corpus/Cargo.toml" ]; then
    git_dir="${CARGO_GIT:-/work/.mirror/rust-lang+cargo/repo}"
    if [ ! -d "$git_dir" ]; then
        git_dir="$(dirname "$corpus")/cargo.git"
        [ -d "$git_dir" ] || git clone --quiet --bare https://github.com/rust-lang/cargo "$git_dir"
    fi
    mkdir -p "$corpus"
    git --git-dir="$git_dir" archive "$cargo_commit" | tar -x -C "$corpus"
fi
cd "$corpus"

out="$(mktemp -d)"
edit="" backup=""
if [ "${NO_INDEX_ONLY:-}" != 1 ]; then
    edit="${EDIT_FILE:-$(rg --files -t rust | sort | sed -n 1p)}"
    [ -f "$edit" ] || { echo "no file to edit (set EDIT_FILE)" >&2; exit 2; }
    backup="$(mktemp)"
    cp -p "$edit" "$backup"
fi
# Put back the edited file and a store moved aside, whatever happens.
trap 'if [ -n "$backup" ]; then cp -p "$backup" "$edit"; fi
      if [ -d "$out/store" ]; then mv "$out/store" .epiphany; fi
      rm -rf "$backup" "$out"' EXIT

rg_args=(-i -c)
for word in $words; do rg_args+=(-e "$word"); done
# The directory explicitly: without one, rg searches its standard input when that is a pipe.
rg_args+=(.)

# The no-index search against rg, interleaved round by round (step 4), into $out/noindex.json.
no_index() {
    local aside=""
    if [ -d .epiphany ]; then
        aside="$out/store"
        mv .epiphany "$aside"
    fi
    python3 - "$out/noindex.json" "$runs" "$EPIPHANY_BIN" "$words" "${rg_args[@]}" <<'PY' || true
import json, statistics, subprocess, sys, time
out, runs, binary, words, rg = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]
commands = {"retrieve-no-index": [binary, "retrieve", words], "rg-again": ["rg", *rg]}
times = {name: [] for name in commands}
for round in range(runs + 2):
    for name, command in commands.items():
        start = time.perf_counter()
        subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        if round >= 2:  # two warm-up rounds
            times[name].append(time.perf_counter() - start)
json.dump({"results": [{"command": name, "median": statistics.median(values)}
                       for name, values in times.items()]}, open(out, "w"))
PY
    if [ -n "$aside" ]; then mv "$aside" .epiphany; fi
}

if [ "${NO_INDEX_ONLY:-}" = 1 ]; then
    echo "corpus: $corpus ($(rg --files | wc -l) files, $(du -sh --exclude=.epiphany . | cut -f1)); query: $words"
    no_index
    python3 - "$out" <<'PY'
import json, sys
medians = {r["command"]: r["median"] for r in json.load(open(f"{sys.argv[1]}/noindex.json"))["results"]}
for command, median in medians.items():
    print(f"{command:18s} median {median * 1000:8.1f} ms")
print(f"no-index / rg      {medians['retrieve-no-index'] / medians['rg-again']:8.2f}   (target <= 2, interleaved)")
PY
    exit 0
fi

"$EPIPHANY_BIN" -q init 2>/dev/null || true
"$EPIPHANY_BIN" index --full
echo "corpus: $corpus ($(rg --files | wc -l) files, $(du -sh --exclude=.epiphany . | cut -f1)); query: $words"

hyperfine --style basic -N --warmup 3 --runs "$runs" --export-json "$out/query.json" \
    -n retrieve "$EPIPHANY_BIN retrieve '$words'" \
    -n rg "rg ${rg_args[*]}"
hyperfine --style basic --warmup 1 --runs 5 --export-json "$out/full.json" \
    -n full-index "$EPIPHANY_BIN -q index --full"
hyperfine --style basic --runs 10 --export-json "$out/incremental.json" \
    --prepare "printf '\n// edited %s\n' \"\$(date +%s%N)\" >> '$edit'" \
    -n incremental-edit "$EPIPHANY_BIN -q index" \
    --prepare "touch '$edit'" \
    -n incremental-touch "$EPIPHANY_BIN -q index"
no_index

python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
medians = {}
for name in ("query", "full", "incremental", "noindex"):
    for result in json.load(open(f"{out}/{name}.json"))["results"]:
        medians[result["command"]] = result["median"]
for command, median in medians.items():
    print(f"{command:18s} median {median * 1000:8.1f} ms")
ratio = medians["retrieve"] / medians["rg"]
print(f"retrieve / rg      {ratio:8.2f}   (target <= 0.5 on 30 MB, <= 1 on 3 MB)")
print(f"no-index / rg      {medians['retrieve-no-index'] / medians['rg-again']:8.2f}   (target <= 2, interleaved)")
print(f"full index         {medians['full-index']:8.2f} s (target <= 5 s)")
print(f"incremental edit   {medians['incremental-edit']:8.3f} s (target <= 0.3 s)")
print(f"incremental touch  {medians['incremental-touch']:8.3f} s")
PY
