#!/usr/bin/env bash
# Peak memory of commands facing a hostile repository or client (issue 31), one line each:
#   1. committed links to /dev/zero at the files the tool reads (`.gitignore`, the cache's
#      notes, the index's `CURRENT` and `meta.json`), each read by the command that reads it;
#   2. an MCP session sending a 1 MB query and a 100 MB line;
#   3. source files whose parse grows without bound (a million nested calls, arrays, open
#      parentheses, a two-million-term sum; each 3-4 MB, under the walk's 4 MiB limit) and a
#      dense but ordinary one (3.9 MB of one-line C functions), each alone in a repository and
#      mapped with no index; says whether the file was left out as over its parse budget.
# Every run gets an address-space limit (LIMIT_KB, default 4 GiB), as a machine would stop a
# runaway process; a run that hits it prints "aborted". Prints the peak resident size and the
# elapsed time (GNU time) and the exit status of each run.
#
# Environment (optional):
#   EPIPHANY_BIN  binary to test (default: cargo build --release, target/release/epiphany)
#   LIMIT_KB      address-space limit per run, in KiB (default 4194304)
set -euo pipefail

# shellcheck source=bench/hostile-common.sh
source "$(dirname "$0")/hostile-common.sh"

# A repository with a store, an index and a compaction note, all committed.
origin="$work/origin"
mkdir -p "$origin/src"
git_quiet init -q "$origin"
printf 'pub fn parse_config() {}\n' >"$origin/src/lib.rs"
printf 'target/\n' >"$origin/.gitignore"
(cd "$origin" && "$bin" -q init && "$bin" -q index \
    && echo '{"trigger":"auto"}' | "$bin" -q hook pre-compact \
    && echo '{"objective":"x"}' | "$bin" -q update)
git_quiet -C "$origin" add -A -f .
git_quiet -C "$origin" commit -q -m base

measure() { # name, directory, stdin file, args...
    local name="$1" dir="$2" input="$3"
    shift 3
    local status=0
    (cd "$dir" && ulimit -v "$limit" && /usr/bin/time -f '%M %e' -o "$work/rss" \
        "$bin" "$@" <"$input" >"$work/out" 2>"$work/err") || status=$?
    local rss seconds
    read -r rss seconds < <(tail -1 "$work/rss" | grep -E '^[0-9]+ [0-9.]+$' || echo '? ?')
    local note=""
    if [ "$status" -gt 3 ] || grep -q 'memory allocation' "$work/err"; then note=" (aborted)"; fi
    if grep -q '"over_budget":true' "$work/out"; then note="$note (over its parse budget)"; fi
    printf '%-44s peak %8s KiB  %6s s  exit %s%s\n' "$name" "$rss" "$seconds" "$status" "$note"
}

empty="$work/empty"
: >"$empty"
for place_and_command in \
    ".gitignore|retrieve parse" \
    ".epiphany/cache/open-segment.json|update" \
    ".epiphany/cache/compactions.json|hook session-start" \
    ".epiphany/cache/retrieval/CURRENT|scene" \
    ".epiphany/cache/retrieval/gen-1/index/meta.json|retrieve parse"; do
    place="${place_and_command%%|*}"
    command="${place_and_command#*|}"
    attacker="$work/attacker-${place//\//_}"
    git_quiet clone -q "$origin" "$attacker"
    rm -rf "${attacker:?}/$place"
    ln -s /dev/zero "$attacker/$place"
    git_quiet -C "$attacker" add -A -f .
    git_quiet -C "$attacker" commit -q -m hostile
    clone="$attacker-clone"
    git_quiet clone -q "$attacker" "$clone"
    input="$empty"
    case "$command" in
        update) input="$work/patch"; echo '{"objective":"y"}' >"$input" ;;
        hook*) input="$work/hook"; echo '{"source":"startup"}' >"$input" ;;
    esac
    # shellcheck disable=SC2086
    measure "$place -> /dev/zero: $command" "$clone" "$input" $command
done

python3 - "$work/mcp" <<'PY'
import json, sys
init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "1"}}}
def call(i, query):
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": "retrieve", "arguments": {"query": query}}}
with open(sys.argv[1] + "-query", "w") as out:
    out.write(json.dumps(init) + "\n" + json.dumps(call(2, "word " * 200_000)) + "\n")
with open(sys.argv[1] + "-line", "w") as out:
    out.write(json.dumps(init) + "\n" + json.dumps(call(2, "x" * (100 * 1024 * 1024))) + "\n")
PY
measure "mcp: a 1 MB query" "$origin" "$work/mcp-query" mcp
measure "mcp: a 100 MB line" "$origin" "$work/mcp-line" mcp

python3 - "$work/parse" <<'PY'
import os, sys
depth = 1_000_000
files = {
    "calls/calls.c": "int f(int x) { return x; }\nint main(void) {\n  return "
    + "f(" * depth + "0" + ")" * depth + ";\n}\n",
    "arrays/nest.js": "var a = " + "[" * 1_900_000 + "]" * 1_900_000 + ";\n",
    "parens/open.rs": "fn a() {" + "(" * 3_900_000 + "\n",
    "sum/long.ts": "let x = " + "+".join(["1"] * 1_900_000) + ";\n",
    "dense/big.c": "\n".join(
        f"static int fn_{i}(int a, int b) {{ return a * {i} + b - (a >> 2) + fn_{max(i - 1, 0)}(b, a); }}"
        for i in range(45_000)
    ) + "\n",
}
for path, text in files.items():
    path = os.path.join(sys.argv[1], path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as out:
        out.write(text)
PY
for dir in calls arrays parens sum dense; do
    git_quiet init -q "$work/parse/$dir"
    measure "parse: $dir (map, no index)" "$work/parse/$dir" "$empty" --json map
done
