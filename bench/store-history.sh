#!/usr/bin/env bash
# What a store costs the repository it lives in, and the reads and writes whose cost must not
# grow with its history, measured in one run (medians) and printed as ratios:
#
#  G. `.git` after 10,000 one-observation writes committed every 10 and `git gc`, against the
#     packed size of the records alone (target: at most 3x).
#  F. A fresh clone's first read at 100,000 records of history (target: at most 2 s) and its
#     second read (target: at most 50 ms); `verify` there (target: at most 2x the first read).
#  R. On a state of 100,000 observations: `rollback --to-revision HEAD~1` against an `update`
#     (target: at most 2x); `update` appending one observation against the same write at 1,000
#     (target: at most 2x).
#  M. The first read after git merges two branches of 1,000 records each onto a
#     100,000-observation base, against a read before the merge (target: at most 2x).
#
# Usage: [SECTIONS=GFRM] [PAIRS=N] bench/store-history.sh [path/to/epiphany]   (default:
#        target/release/epiphany, built when missing)
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
want() { [[ ${SECTIONS:-GFRM} == *"$1"* ]]; }
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

if want R; then
  echo "== R. rollback and update on a state of 100,000 observations" >&2
  big_state "$work/r"
  hyperfine -N --warmup 3 --runs 20 --export-json "$work/r1.json" --command-name "update at 100,000" "$work/append-one.sh" >&2
  # Each run undoes the write its preparation made, so the state stays the same size.
  hyperfine -N --warmup 1 --runs 10 --export-json "$work/r2.json" \
    --prepare "$work/append-one.sh" --command-name "rollback --to-revision HEAD~1" "$bin -q rollback --to-revision HEAD~1" >&2
  wc -c .epiphany/rollout/* | tail -1 >&2
  small="$work/r-small"; new_repo "$small"
  seal_records "$small/.epiphany/rollout/20260101T000000Z-0000000000000000-00000000.jsonl" 1000 "" > /dev/null
  git add -A && git commit -qm history && "$bin" scene > /dev/null
  hyperfine -N --warmup 3 --runs 20 --export-json "$work/r3.json" --command-name "update at 1,000" "$work/append-one.sh" >&2
  ratio "rollback HEAD~1 / update, at 100,000 observations" "$(median "$work/r2.json")" "$(median "$work/r1.json")" 2
  ratio "update at 100,000 observations / at 1,000" "$(median "$work/r1.json")" "$(median "$work/r3.json")" 2
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
  # The two reads are a few milliseconds each: measured as two hyperfine series minutes
  # apart, their ratio swings with the machine's load (1.6x to 2.5x on one quiet machine).
  # So the pairs are interleaved, PAIRS of them (default 30): a read before the merge, then
  # the cache restored as the writes left it (synced, so that the kernel is not writing 60 MB
  # of copy back during the read), then the first read after the merge; medians of each,
  # wall and CPU (user + system) time.
  python3 - "$bin" "$work" "${PAIRS:-30}" <<'PY'
import os, resource, shutil, statistics, subprocess, sys, time
binary, work, pairs = sys.argv[1], sys.argv[2], int(sys.argv[3])
def read(cwd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([binary, "scene"], cwd=cwd, stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
cache = f"{work}/m/.epiphany/cache/snapshots"
for _ in range(3):
    read(f"{work}/m-before")
times = {"before": [], "after": []}
for _ in range(pairs):
    times["before"].append(read(f"{work}/m-before"))
    shutil.rmtree(cache)
    shutil.copytree(f"{work}/m-cache", cache, symlinks=True)
    os.sync()
    times["after"].append(read(f"{work}/m"))
median = {(k, i): statistics.median(t[i] for t in v) * 1000 for k, v in times.items() for i in (0, 1)}
for what, i in (("wall", 0), ("CPU", 1)):
    print("first read after the merge / a read before it, %-4s %9.1f ms / %9.1f ms = %5.2fx (target <= 2; medians of %d interleaved pairs)"
          % (what, median["after", i], median["before", i], median["after", i] / median["before", i], pairs))
PY
  "$bin" verify >&2
fi
