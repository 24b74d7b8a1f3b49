#!/usr/bin/env bash
# The store's costs at scale, measured in one run with hyperfine (medians), beside `cat` of the
# store files:
#
#  A. A state of 100,000 observations, 100,000 evidence records and a 20,000-node graph:
#     `update` appending one observation and adding one node (targets: 30 ms), and the
#     projections `scene`, `prompt`, `context --node`, `graph --node --depth 2`,
#     `log --limit 10` (targets: 50 ms).
#  B. `verify` and `show --revision 1` at 10,000, 20,000 and 40,000 one-observation records:
#     the curve must be linear.
#  C. The first read after git merges two branches that wrote 1,000 records each, against the
#     same read before the merge (target: at most 2x), and the reads after it (which start from
#     the fold the first one remembered).
#  D. Reads of 3,000 records written in 300 committed segments (one commit after every ten
#     writes), which every read checks against what HEAD's commit holds (docs/store.md#lost-records):
#     `scene`, `show --json` and `prompt` with the cache; `scene` when HEAD's `rollout/` tree is
#     not the one last measured but its segments are (the first read after a commit), when
#     nothing was measured, and with no cache at all (a fresh clone's first read); with loose
#     objects and after `git gc`.
#
# Usage: [SECTIONS=ABCD] bench/store-speed.sh [path/to/epiphany]   (default: target/release/epiphany;
#        SECTIONS picks the sections to run)
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
want() { [[ ${SECTIONS:-ABCD} == *"$1"* ]]; }
median() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"]; [print("%-44s median %8.1f ms" % (x["command"], x["median"]*1000)) for x in r]' "$1"; }

# Writes `count` one-observation records straight into a rollout segment, sealed as epiphany
# seals them (the id is the SHA-256 of the line without it), each the child of the previous.
seal_records() {
  python3 - "$1" "$2" <<'PY'
import hashlib, json, sys
path, count = sys.argv[1], int(sys.argv[2])
parent = None
with open(path, "w") as out:
    for i in range(count):
        body = {"parents": [parent] if parent else [], "at": "2026-01-01T00:00:00Z", "source": "update",
                "changed_fields": ["observations", "evidence"],
                "patch": {"observations": [{"id": f"obs-{i}", "summary": f"observation {i}", "source_kind": "test",
                                            "status": "ok", "evidence_ids": [f"ev-{i}"]}],
                          "evidence": [{"id": f"ev-{i}", "kind": "test", "status": "ok", "summary": f"evidence {i}"}]}}
        text = json.dumps(body, separators=(",", ":"))
        parent = hashlib.sha256(text.encode()).hexdigest()
        out.write('{"id":"' + parent + '",' + text[1:] + "\n")
PY
}

if want A; then
echo "== A. a state of 100,000 observations, 100,000 evidence records, 20,000 nodes" >&2
a="$work/a"; mkdir -p "$a/src"; cd "$a"
git init -q . && for i in $(seq 0 299); do printf '// module %s\n' "$i" > "src/module_$i.rs"; done
git add -A && git commit -qm code
"$bin" init -q
python3 - <<'PY'
import json
for batch in range(20):
    obs, ev = [], []
    for i in range(batch * 5000, (batch + 1) * 5000):
        ev.append({"id": f"ev-{i}", "kind": "verification", "status": "ok",
                   "summary": f"evidence {i}: the parser keeps span {i} intact across retries",
                   "code_refs": [{"path": f"src/module_{i % 300}.rs", "start_line": 1, "end_line": 1}]})
        obs.append({"id": f"obs-{i}", "summary": f"observation {i} about module {i % 300}",
                    "source_kind": "test", "status": "ok", "evidence_ids": [f"ev-{i}"],
                    "code_refs": [{"path": f"src/module_{i % 300}.rs"}]})
    nodes = [{"id": f"node-{i}", "title": f"Node {i}", "purpose": f"handles concern {i}",
              "mechanism": "a loop over the queue", "status": "verified",
              "code_refs": [{"path": f"src/module_{i % 300}.rs"}]} for i in range(batch * 1000, (batch + 1) * 1000)]
    edges = [{"id": f"edge-{i}", "source_id": f"node-{i}", "target_id": f"node-{i - 1 if i % 1000 else i}", "kind": "calls"}
             for i in range(batch * 1000, (batch + 1) * 1000)]
    patch = {"observations": obs, "evidence": ev,
             "upsert": {"architecture_nodes": nodes, "architecture_edges": edges}}
    if batch == 0:
        patch["objective"] = "benchmark"
    json.dump(patch, open(f"batch-{batch:02}.json", "w"))
PY
for f in batch-*.json; do "$bin" -q update "$f"; done
rm batch-*.json
git add -A && git commit -qm state
du -sh .epiphany/rollout .epiphany/snapshots >&2

cat > append-one.sh <<SH
#!/usr/bin/env bash
printf '{"observations":[{"id":"obs-b%s","summary":"one more","source_kind":"test","status":"ok","evidence_ids":["ev-1"]}]}' "\$(date +%s%N)" | "$bin" -q update
SH
cat > add-node.sh <<SH
#!/usr/bin/env bash
printf '{"upsert":{"architecture_nodes":[{"id":"n-%s","title":"t","purpose":"p"}]}}' "\$(date +%s%N)" | "$bin" -q update
SH
cat > baseline.sh <<'SH'
#!/usr/bin/env bash
printf '%s' "$(date +%s%N)" > /dev/null
SH
chmod +x append-one.sh add-node.sh baseline.sh
hyperfine -N --warmup 3 --runs 30 --export-json "$work/a.json" \
  --command-name "cat of the store files" "sh -c 'cat .epiphany/rollout/* .epiphany/snapshots/* > /dev/null'" \
  --command-name "update: append one observation" ./append-one.sh \
  --command-name "update: add one node" ./add-node.sh \
  --command-name "shell wrapper of the two updates" ./baseline.sh \
  --command-name "scene" "$bin scene" \
  --command-name "prompt" "$bin prompt" \
  --command-name "context --node node-5" "$bin context --node node-5" \
  --command-name "graph --node node-5 --depth 2" "$bin graph --node node-5 --depth 2" \
  --command-name "log --limit 10" "$bin log --limit 10" >&2
median "$work/a.json"
fi

if want B; then
echo "== B. verify and show --revision 1 against history length" >&2
for n in 10000 20000 40000; do
  b="$work/b$n"; mkdir -p "$b"; cd "$b"; "$bin" init -q
  seal_records "$b/.epiphany/rollout/20260101T000000Z-0000000000000000.jsonl" "$n"
  hyperfine -N --warmup 1 --runs 5 --export-json "$work/b$n.json" \
    --command-name "verify at $n records" "$bin verify" \
    --command-name "show --revision 1 at $n records" "$bin show --revision 1" >&2
  median "$work/b$n.json"
done
fi

if want C; then
echo "== C. the first read after a merge of two branches with 1,000 records each" >&2
c="$work/c"; mkdir -p "$c"; cd "$c"; git init -q -b main .
"$bin" init -q --objective "merge benchmark"
git add -A && git commit -qm base
write_many() {
  python3 - "$1" <<'PY' | while read -r line; do printf '%s' "$line" | "$bin" -q update; done
import json, sys
for i in range(1000):
    print(json.dumps({"observations": [{"id": f"obs-{sys.argv[1]}-{i}", "summary": "s", "source_kind": "t", "status": "ok", "evidence_ids": [f"ev-{sys.argv[1]}-{i}"]}],
                      "evidence": [{"id": f"ev-{sys.argv[1]}-{i}", "kind": "t", "status": "ok", "summary": "s"}]}))
PY
}
git checkout -q -b feature && write_many feature && git add -A && git commit -qm feature
git checkout -q main && write_many main && git add -A && git commit -qm main
hyperfine -N --warmup 2 --runs 20 --export-json "$work/c1.json" --command-name "scene before the merge" "$bin scene" >&2
git merge -q --no-edit feature
# The first read folds both branches and remembers the fold in cache/snapshots/; removing it
# before every run measures that first read, and the runs without it the reads after it.
hyperfine -N --warmup 0 --runs 20 --export-json "$work/c2.json" \
  --prepare "rm -rf $c/.epiphany/cache/snapshots" \
  --command-name "scene after the merge: the first read" "$bin scene" >&2
hyperfine -N --warmup 1 --runs 20 --export-json "$work/c3.json" \
  --command-name "scene after the merge: later reads" "$bin scene" >&2
median "$work/c1.json"; median "$work/c2.json"; median "$work/c3.json"
python3 -c 'import json,sys; m=[json.load(open(f))["results"][0]["median"] for f in sys.argv[1:]]; print("%-44s %8.1fx (target <= 2x)" % ("first read after the merge / before", m[1] / m[0])); print("%-44s %8.1fx" % ("later reads after the merge / before", m[2] / m[0]))' "$work/c1.json" "$work/c2.json" "$work/c3.json"
"$bin" verify
fi

if want D; then
echo "== D. reads of 3,000 records in 300 committed segments" >&2
d="$work/d"; mkdir -p "$d"; cd "$d"; git init -q -b main .
"$bin" init -q --objective "segments benchmark"
for round in $(seq 1 300); do
  python3 - "$round" <<'PY' | while read -r line; do printf '%s' "$line" | "$bin" -q update; done
import json, sys
r = sys.argv[1]
for i in range(10):
    print(json.dumps({"observations": [{"id": f"obs-{r}-{i}", "summary": "s", "source_kind": "t", "status": "ok", "evidence_ids": [f"ev-{r}-{i}"]}],
                      "evidence": [{"id": f"ev-{r}-{i}", "kind": "t", "status": "ok", "summary": "s"}]}))
PY
  git add -A && git commit -qm "round $round"
done
echo "$(ls .epiphany/rollout | wc -l) segments, $(git count-objects | cut -d' ' -f1) loose objects" >&2
for objects in loose packed; do
  [ "$objects" = packed ] && git gc -q
  "$bin" scene > /dev/null
  hyperfine -N --warmup 3 --runs 40 --export-json "$work/d-$objects.json" \
    --command-name "scene ($objects objects)" "$bin scene" \
    --command-name "show --json ($objects objects)" "$bin show --json" \
    --command-name "prompt ($objects objects)" "$bin prompt" >&2
  hyperfine -N --warmup 1 --runs 20 --export-json "$work/d-$objects-cold.json" \
    --prepare "rm -rf $d/.epiphany/cache" \
    --command-name "scene, no cache ($objects objects)" "$bin scene" >&2
  note="$d/.epiphany/cache/committed-rollout.json"
  hyperfine -N --warmup 1 --runs 40 --export-json "$work/d-$objects-moved.json" \
    --prepare "sed -i 's/\"tree\":\"[0-9a-f]*\"/\"tree\":\"0\"/' $note" \
    --command-name "scene, a new tree of measured segments ($objects objects)" "$bin scene" \
    --prepare "rm -f $note" \
    --command-name "scene, nothing measured ($objects objects)" "$bin scene" >&2
  median "$work/d-$objects.json"; median "$work/d-$objects-moved.json"; median "$work/d-$objects-cold.json"
done
fi
