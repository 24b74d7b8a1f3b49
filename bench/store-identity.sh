#!/usr/bin/env bash
# What the store's identity costs (docs/store.md#store-identity), on one store of RECORDS
# one-observation records (default 100,000) that claim it, read by two binaries: BEFORE (one
# built before identities, which ignores the claim) and AFTER (this one, which checks every
# line it parses). Prints medians and AFTER/BEFORE ratios of:
#
#  - a cold read (`scene` with no cache: every line parsed, hashed and checked, then cached);
#  - a warm read (`scene` from the cached fold: only the identity file and the listing);
#  - `verify` (every line, every snapshot);
#
# and the bytes a record takes with its claim and without.
#
# Usage: [RECORDS=N] bench/store-identity.sh path/to/epiphany-before [path/to/epiphany]
#        (the second defaults to target/release/epiphany, built when missing)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
before=${1:?give the binary built before identities}
after=${2:-$here/target/release/epiphany}
[ -x "$after" ] || (cd "$here" && cargo build --release --locked --quiet)
command -v hyperfine >/dev/null || { echo "hyperfine is required: apt-get install -y hyperfine" >&2; exit 2; }
records=${RECORDS:-100000}
export EPIPHANY_NOW=2026-01-01T00:00:00Z GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_SYSTEM=/dev/null

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
store="$work/store"
mkdir -p "$store" && cd "$store" && git init -q . && "$after" init >/dev/null
identity=$(cat .epiphany/rollout/identity)

# Writes `count` one-observation records into a segment, sealed as epiphany seals them, each the
# child of the previous, claiming `identity` (none when empty).
seal_records() {
  python3 - "$1" "$2" "$3" <<'PY'
import hashlib, json, sys
path, count, identity = sys.argv[1], int(sys.argv[2]), sys.argv[3]
parent = None
with open(path, "w") as out:
    for i in range(count):
        body = {"store": identity} if identity else {}
        body.update({"parents": [parent] if parent else [], "at": "2026-01-01T00:00:00Z", "source": "update",
                "changed_fields": ["observations", "evidence"],
                "patch": {"observations": [{"id": f"obs-{i}", "summary": f"observation {i}", "source_kind": "test",
                                            "status": "ok", "evidence_ids": [f"ev-{i}"]}],
                          "evidence": [{"id": f"ev-{i}", "kind": "test", "status": "ok", "summary": f"evidence {i}"}]}})
        text = json.dumps(body, separators=(",", ":"))
        parent = hashlib.sha256(text.encode()).hexdigest()
        out.write('{"id":"' + parent + '",' + text[1:] + "\n")
PY
}

seal_records .epiphany/rollout/20260101T000000Z-bench-00000000.jsonl "$records" "$identity"
seal_records "$work/unclaimed.jsonl" "$records" ""
claimed=$(stat -c %s .epiphany/rollout/20260101T000000Z-bench-00000000.jsonl)
unclaimed=$(stat -c %s "$work/unclaimed.jsonl")
python3 -c 'import sys; c,u,n=map(int,sys.argv[1:]); print("bytes per record: %.1f with the claim, %.1f without: +%.1f (%.1f%%)" % (c/n, u/n, (c-u)/n, 100*(c-u)/u))' "$claimed" "$unclaimed" "$records"

# Both binaries must read the same state from it.
[ "$("$before" --json show | python3 -c 'import json,sys; print(json.load(sys.stdin)["revision"])')" = "$records" ]
[ "$("$after" --json show | python3 -c 'import json,sys; print(json.load(sys.stdin)["revision"])')" = "$records" ]

median() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"]; print(" ".join(str(x["median"]) for x in r))' "$1"; }
ratio() { python3 -c 'import sys; a,b=float(sys.argv[2]),float(sys.argv[3]); print("%-12s after %8.1f ms / before %8.1f ms = %5.3fx" % (sys.argv[1], b*1000, a*1000, b/a))' "$@"; }
measure() {
  local name=$1; shift
  hyperfine -N --style none --export-json "$work/$name.json" "$@" >/dev/null 2>&1
  # shellcheck disable=SC2046
  ratio "$name" $(median "$work/$name.json")
}
measure cold --runs 7 --prepare 'rm -rf .epiphany/cache' "$before scene" "$after scene"
"$after" scene >/dev/null
measure warm --warmup 3 --runs 30 "$before scene" "$after scene"
measure verify --runs 5 "$before verify" "$after verify"
