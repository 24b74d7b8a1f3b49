#!/usr/bin/env bash
# What a store costs the repository it lives in, and the reads and writes whose cost must not
# grow with its history, measured in one run (medians) and printed as ratios:
#
#  G. `.git` after 10,000 one-observation writes committed every 10 and `git gc`, against the
#     packed size of the records alone (target: at most 3x).
#  F. A fresh clone's first read at 100,000 records of history (target: at most 2 s, 1 s of
#     CPU and 300 MB) and its second read (target: at most 50 ms); `verify` there (target: at
#     most 2x the first read).
#  R. On a state of 100,000 observations: `rollback --to-revision HEAD~1` against an `update`
#     (target: at most 2x); `update` appending one observation against the same write at 1,000
#     (target: at most 2x); the first read after the rollback (no target).
#  M. The first read after git merges two branches of 1,000 records each onto a
#     100,000-observation base, against a read before the merge (target: at most 2x).
#  S. COMMITS commits of ten one-observation writes each (default 2,000), one segment file per
#     commit, built by bench/segment-history.py (git fast-import, in seconds): warm `scene` and
#     `prompt` against the same records in FEW files (default 100; FEW=1 compares with one
#     file) (target: at most 1.5x); `update` there against the same write at 1,000 records in
#     100 commits (target: at most 2x) and in FEW files (target: at most 1.5x); `log --limit
#     10` (target: at most 20 ms CPU); the loose objects one commit of ten writes through the
#     CLI adds (target: at most 64 KiB). Each again after `epiphany compact` joined the
#     committed segments (committed as a user would). LAYOUT=flat builds the segments as
#     stores written before sharding hold them (the default until the writer shards).
# R, M and S time their commands in PAIRS interleaved rounds (default 30), wall and CPU time.
#
# Usage: [SECTIONS=GFRMS] [PAIRS=N] [COMMITS=N] [FEW=N] [LAYOUT=flat|sharded] bench/store-history.sh
#        [path/to/epiphany]   (default: target/release/epiphany, built when missing)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$here/target/release/epiphany}
[ -x "$bin" ] || (cd "$here" && cargo build --release --locked --quiet)
command -v hyperfine >/dev/null || { echo "hyperfine is required: apt-get install -y hyperfine" >&2; exit 2; }
export EPIPHANY_NOW=2026-01-01T00:00:00Z GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_SYSTEM=/dev/null
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
want() { [[ ${SECTIONS:-GFRMS} == *"$1"* ]]; }
median() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"][0]["median"])' "$1"; }
ratio() { python3 -c 'import sys; a,b=float(sys.argv[2]),float(sys.argv[3]); print("%-58s %9.1f ms / %9.1f ms = %5.2fx (target <= %s)" % (sys.argv[1], a*1000, b*1000, a/b, sys.argv[4]))' "$@"; }
pack_kib() { git -C "$1" count-objects -v | awk '/^size-pack/ {print $2}'; }

# Writes `count` one-observation records into the segment `path`, sealed as epiphany seals
# them (the id is the SHA-256 of the line without it), each the child of the previous; the
# first names `parent` when given.
seal_records() {
  python3 - "$@" <<'PY'
import hashlib, json, sys
path, count, prefix = sys.argv[1], int(sys.argv[2]), sys.argv[3]
parent = sys.argv[4] if len(sys.argv) > 4 else None
with open(path, "w") as out:
    for i in range(count):
        body = {"parents": [parent] if parent else [], "at": "2026-01-01T00:00:00Z", "source": "update",
                "changed_fields": ["observations", "evidence"],
                "patch": {"observations": [{"id": f"obs-{prefix}{i}", "summary": f"observation {i}: the parser keeps span {i}",
                                            "source_kind": "test", "status": "ok", "evidence_ids": [f"ev-{prefix}{i}"]}],
                          "evidence": [{"id": f"ev-{prefix}{i}", "kind": "test", "status": "ok", "summary": f"evidence {i}"}]}}
        text = json.dumps(body, separators=(",", ":"))
        parent = hashlib.sha256(text.encode()).hexdigest()
        out.write('{"id":"' + parent + '",' + text[1:] + "\n")
print(parent)
PY
}

new_repo() { mkdir -p "$1" && cd "$1" && git init -q -b main . && "$bin" init -q && git add -A && git commit -qm init; }

if want G; then
  echo "== G. .git after 10,000 one-observation writes, committed every 10" >&2
  g="$work/g"; new_repo "$g"
  python3 - <<'PY' > "$work/writes.jsonl"
import json
for i in range(10000):
    print(json.dumps({"observations": [{"id": f"obs-{i}", "summary": f"observation {i}: the lexer keeps span {i} across retries",
                                        "source_kind": "test", "status": "ok", "evidence_ids": [f"ev-{i}"]}],
                      "evidence": [{"id": f"ev-{i}", "kind": "test", "status": "ok", "summary": f"evidence {i}"}]}))
PY
  n=0
  while read -r line; do
    printf '%s' "$line" | "$bin" -q update
    n=$((n + 1))
    if (( n % 10 == 0 )); then git add -A .epiphany && git commit -qm "write $n"; fi
  done < "$work/writes.jsonl"
  git gc -q --aggressive
  git_kib=$(pack_kib "$g")
  r="$work/records-only"; mkdir -p "$r" && cd "$r" && git init -q . && cp -r "$g/.epiphany/rollout" . && git add -A && git commit -qm records && git gc -q --aggressive
  records_kib=$(pack_kib "$r")
  tracked=$(git -C "$g" ls-files .epiphany | grep -vc '^.epiphany/rollout/' || true)
  python3 -c 'import sys; g,r=int(sys.argv[1]),int(sys.argv[2]); print("%-58s %9d KiB / %9d KiB = %5.2fx (target <= 3)" % (".git after gc / the records alone, packed", g, r, g/r))' "$git_kib" "$records_kib"
  echo "files git tracks in .epiphany/ besides rollout/: $tracked (target: the two attribute files)"
fi

if want F; then
  echo "== F. a fresh clone of 100,000 records of history" >&2
  f="$work/f"; new_repo "$f"
  seal_records "$f/.epiphany/rollout/20260101T000000Z-0000000000000000-00000000.jsonl" 100000 "" > /dev/null
  git add -A && git commit -qm history
  git clone -q "$f" "$work/f-clone"; cd "$work/f-clone"
  hyperfine -N --warmup 0 --runs 5 --export-json "$work/f1.json" \
    --prepare "rm -rf $work/f-clone/.epiphany/cache" --command-name "first read (scene)" "$bin scene" >&2
  # CPU and peak memory of the first read, by /usr/bin/time (three runs, the median).
  for _ in 1 2 3; do
    rm -rf "$work/f-clone/.epiphany/cache"
    /usr/bin/time -f "%U %S %M" -a -o "$work/f-time" "$bin" scene > /dev/null
  done
  python3 -c 'import statistics,sys; runs=[l.split() for l in open(sys.argv[1])]
cpu=statistics.median(float(u)+float(s) for u,s,_ in runs); mb=statistics.median(int(m) for *_,m in runs)/1000
print("%-58s %9.2f s CPU, %6.0f MB (target <= 1 s, 300 MB)" % ("fresh clone: first read at 100,000 records", cpu, mb))' "$work/f-time"
  "$bin" scene > /dev/null
  hyperfine -N --warmup 2 --runs 20 --export-json "$work/f2.json" --command-name "second read (scene)" "$bin scene" >&2
  hyperfine -N --warmup 1 --runs 5 --export-json "$work/f3.json" --command-name "verify" "$bin verify" >&2
  python3 -c 'import sys; print("%-58s %9.1f ms (target <= 2000 ms)" % ("fresh clone: first read at 100,000 records", float(sys.argv[1])*1000))' "$(median "$work/f1.json")"
  python3 -c 'import sys; print("%-58s %9.1f ms (target <= 50 ms)" % ("fresh clone: second read", float(sys.argv[1])*1000))' "$(median "$work/f2.json")"
  ratio "verify / the first read of a fresh clone" "$(median "$work/f3.json")" "$(median "$work/f1.json")" 2
fi

# A state of 100,000 observations and evidence records (20 writes of 5,000) and 1,000 nodes,
# committed; `$1` is the directory.
big_state() {
  new_repo "$1"
  python3 - <<'PY'
import json
for batch in range(20):
    obs = [{"id": f"obs-{i}", "summary": f"observation {i} about module {i % 300}", "source_kind": "test",
            "status": "ok", "evidence_ids": [f"ev-{i}"]} for i in range(batch * 5000, (batch + 1) * 5000)]
    ev = [{"id": f"ev-{i}", "kind": "verification", "status": "ok", "summary": f"evidence {i}"}
          for i in range(batch * 5000, (batch + 1) * 5000)]
    nodes = [{"id": f"node-{i}", "title": f"Node {i}", "purpose": f"handles concern {i}"}
             for i in range(batch * 50, (batch + 1) * 50)]
    patch = {"observations": obs, "evidence": ev, "upsert": {"architecture_nodes": nodes}}
    json.dump(patch, open(f"batch-{batch:02}.json", "w"))
PY
  for b in batch-*.json; do "$bin" -q update "$b"; done
  rm batch-*.json
  git add -A && git commit -qm state
}

cat > "$work/append-one.sh" <<SH
#!/usr/bin/env bash
printf '{"observations":[{"id":"obs-b%s","summary":"one more","source_kind":"test","status":"ok","evidence_ids":["ev-1"]}]}' "\$(date +%s%N)" | "$bin" -q update
SH
chmod +x "$work/append-one.sh"

# The wall and CPU ratios of two steps of a `bench/pairs.py` output: LABEL FILE NAME_A NAME_B TARGET.
pair_ratios() {
  local a_wall a_cpu b_wall b_cpu
  IFS=$'\t' read -r _ a_wall a_cpu < <(grep -F "$3"$'\t' "$2")
  IFS=$'\t' read -r _ b_wall b_cpu < <(grep -F "$4"$'\t' "$2")
  ratio "$1, wall" "$a_wall" "$b_wall" "$5"
  ratio "$1, CPU" "$a_cpu" "$b_cpu" "$5"
}
rounds=${PAIRS:-30}

if want R; then
  echo "== R. rollback and update on a state of 100,000 observations" >&2
  big_state "$work/r"
  small="$work/r-small"; new_repo "$small"
  seal_records "$small/.epiphany/rollout/20260101T000000Z-0000000000000000-00000000.jsonl" 1000 "" > /dev/null
  git add -A && git commit -qm history && "$bin" scene > /dev/null
  # The rollback undoes the update just timed, so the big state stays the same size. The read
  # after it folds the rollback on the whole lists and caches that fold, as the first read
  # after any rollback does; timed apart, so that the next update is an ordinary one.
  python3 "$here/bench/pairs.py" "$rounds" \
    "update at 100,000" "$work/r" "$work/append-one.sh" \
    "update at 1,000" "$small" "$work/append-one.sh" \
    "rollback" "$work/r" "$bin -q rollback --to-revision HEAD~1" \
    "read after the rollback" "$work/r" "$bin scene" > "$work/r.tsv"
  wc -c "$work"/r/.epiphany/rollout/* | tail -1 >&2
  pair_ratios "rollback HEAD~1 / update, at 100,000 observations" "$work/r.tsv" "rollback" "update at 100,000" 2
  pair_ratios "update at 100,000 observations / at 1,000" "$work/r.tsv" "update at 100,000" "update at 1,000" 2
  IFS=$'\t' read -r _ wall _ < <(grep -F "read after the rollback"$'\t' "$work/r.tsv")
  python3 -c 'import sys; print("%-58s %9.1f ms (no target)" % ("first read after a rollback, at 100,000 observations", float(sys.argv[1])*1000))' "$wall"
fi

if want M; then
  echo "== M. the first read after merging two branches of 1,000 records onto a 100,000-observation base" >&2
  big_state "$work/m"
  git clone -q "$work/m" "$work/m-theirs"
  write_many() {
    python3 - "$1" <<'PY' | while read -r line; do printf '%s' "$line" | "$bin" -q update; done
import json, sys
for i in range(1000):
    print(json.dumps({"observations": [{"id": f"obs-{sys.argv[1]}-{i}", "summary": "s", "source_kind": "t", "status": "ok", "evidence_ids": [f"ev-{sys.argv[1]}-{i}"]}],
                      "evidence": [{"id": f"ev-{sys.argv[1]}-{i}", "kind": "t", "status": "ok", "summary": "s"}]}))
PY
  }
  (cd "$work/m-theirs" && write_many theirs && git add -A && git commit -qm theirs)
  cd "$work/m" && write_many ours && git add -A && git commit -qm ours
  "$bin" scene > /dev/null
  cp -a "$work/m" "$work/m-before"
  cp -a .epiphany/cache/snapshots "$work/m-cache"
  git pull -q --no-rebase --no-edit "$work/m-theirs" main
  # The cache as the writes left it before every read after the merge: each is the first.
  # `sync` writes the copy back first, so that the read is not timed while the kernel writes
  # 60 MB of someone else's copy.
  printf '#!/bin/sh\nrm -rf %s && cp -a %s %s && sync\n' "$work/m/.epiphany/cache/snapshots" \
    "$work/m-cache" "$work/m/.epiphany/cache/snapshots" > "$work/restore-cache.sh"
  chmod +x "$work/restore-cache.sh"
  python3 "$here/bench/pairs.py" "$rounds" \
    "before" "$work/m-before" "$bin scene" \
    "-" "$work/m" "$work/restore-cache.sh" \
    "after" "$work/m" "$bin scene" > "$work/m.tsv"
  pair_ratios "first read after the merge / a read before it" "$work/m.tsv" "after" "before" 2
  "$bin" verify >&2
fi

if want S; then
  commits=${COMMITS:-2000}
  echo "== S. $commits commits of ten writes, one segment file each (layout ${LAYOUT:-flat})" >&2
  build() { new_repo "$1"; shift; python3 "$here/bench/segment-history.py" "$PWD" "$@" --layout "${LAYOUT:-flat}" > /dev/null; }
  build "$work/s" "$commits"
  few=${FEW:-100}
  build "$work/s-few" "$commits" --files "$few"
  build "$work/s-small" 100
  # The same history after `epiphany compact`, committed as a user would.
  cp -a "$work/s" "$work/s-compacted"
  (cd "$work/s-compacted" && "$bin" -q compact && git add -A .epiphany && git commit -qm compact)
  # Writes are timed on copies: a read of a store the timed writes grew would read their
  # records past its fold, which the store of 100 files it is compared with has not.
  for d in s s-compacted s-few; do cp -a "$work/$d" "$work/$d-w"; done
  for d in s s-compacted s-few s-small s-w s-compacted-w s-few-w; do (cd "$work/$d" && "$bin" scene > /dev/null); done
  python3 "$here/bench/pairs.py" "$rounds" \
    "scene, many files" "$work/s" "$bin scene" \
    "scene, compacted" "$work/s-compacted" "$bin scene" \
    "scene, few files" "$work/s-few" "$bin scene" \
    "prompt, many files" "$work/s" "$bin prompt" \
    "prompt, compacted" "$work/s-compacted" "$bin prompt" \
    "prompt, few files" "$work/s-few" "$bin prompt" \
    "update, many files" "$work/s-w" "$work/append-one.sh" \
    "update, compacted" "$work/s-compacted-w" "$work/append-one.sh" \
    "update at 1,000" "$work/s-small" "$work/append-one.sh" \
    "update, few files" "$work/s-few-w" "$work/append-one.sh" \
    "log, many files" "$work/s" "$bin log --limit 10" \
    "log, compacted" "$work/s-compacted" "$bin log --limit 10" > "$work/s.tsv"
  files=$(find "$work/s/.epiphany/rollout" -name '*.jsonl' | wc -l)
  for layout in "many files" compacted; do
    pair_ratios "warm scene, $layout / $few file(s)" "$work/s.tsv" "scene, $layout" "scene, few files" 1.5
    pair_ratios "warm prompt, $layout / $few file(s)" "$work/s.tsv" "prompt, $layout" "prompt, few files" 1.5
    pair_ratios "update at $((commits * 10)), $layout / at 1,000" "$work/s.tsv" "update, $layout" "update at 1,000" 2
    pair_ratios "update at $((commits * 10)), $layout / $few file(s)" "$work/s.tsv" "update, $layout" "update, few files" 1.5
    IFS=$'\t' read -r _ _ cpu < <(grep -F "log, $layout"$'\t' "$work/s.tsv")
    python3 -c 'import sys; print("%-58s %9.1f ms CPU (target <= 20 ms)" % (sys.argv[1], float(sys.argv[2])*1000))' "log --limit 10, $layout" "$cpu"
  done
  echo "(many files: $files segment files; compacted: $(find "$work/s-compacted/.epiphany/rollout" -name '*.jsonl' | wc -l))" >&2
  # One commit of ten writes through the CLI, on top of what the timed writes left committed.
  loose() { find .git/objects -path '*/objects/??/*' -type f | sort; }
  for layout in s s-compacted; do
    cd "$work/$layout" && git add -A .epiphany && { git diff --cached --quiet || git commit -qm "what the reads cached"; }
    loose > "$work/loose-before"
    for _ in $(seq 10); do "$work/append-one.sh"; done
    git add -A .epiphany && git commit -qm "ten writes"
    added=$(loose | comm -13 "$work/loose-before" - | xargs stat -c %s | awk '{s += $1} END {print s}')
    python3 -c 'import sys; print("%-58s %9.1f KiB (target <= 64 KiB)" % (sys.argv[1], int(sys.argv[2])/1024))' "loose objects of one commit of ten writes, $layout" "$added"
  done
fi
