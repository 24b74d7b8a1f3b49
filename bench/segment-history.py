"""Builds, in seconds, the git history a store gets from a year of writes committed every ten:
one segment file per commit, each of ten one-observation records sealed as epiphany seals them
(the id is the SHA-256 of the line without it), each record the child of the one before.

Usage: python3 bench/segment-history.py REPO COMMITS [--files N] [--layout sharded|flat]

REPO is a git work tree on `main` with an `epiphany init` store committed. COMMITS commits are
added through `git fast-import`, spread evenly over 2025, each adding one segment where the
writer puts it (`--layout flat`, the default: `rollout/<name>`; `sharded`:
`rollout/<YYYY-MM>/<DD>/<name>`, a layout the store does not read yet, kept to measure what one
commit would add under it), then the work tree is checked
out. With `--files N` the same records go into N segments instead, in one commit: the store to
compare with. Prints the id of the last record.
"""
import argparse
import hashlib
import json
import subprocess
import sys
from datetime import datetime, timedelta, timezone

PER_COMMIT = 10


def seal(parent, at, n):
    body = {"parents": [parent] if parent else [], "at": at, "source": "update",
            "changed_fields": ["observations", "evidence"],
            "patch": {"observations": [{"id": f"obs-{n}", "summary": f"observation {n}: the lexer keeps span {n} across retries",
                                        "source_kind": "test", "status": "ok", "evidence_ids": [f"ev-{n}"]}],
                      "evidence": [{"id": f"ev-{n}", "kind": "test", "status": "ok", "summary": f"evidence {n}"}]}}
    text = json.dumps(body, separators=(",", ":"))
    rid = hashlib.sha256(text.encode()).hexdigest()
    return rid, '{"id":"' + rid + '",' + text[1:] + "\n"


def segment_path(first_id, at, layout, n):
    stamp = "".join(c for c in at if c.isalnum())
    name = f"{stamp}-{first_id[:16]}-{n:08x}.jsonl"
    if layout == "flat":
        return name
    return f"{stamp[0:4]}-{stamp[4:6]}/{stamp[6:8]}/{name}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("repo")
    parser.add_argument("commits", type=int)
    parser.add_argument("--files", type=int)
    parser.add_argument("--layout", choices=["sharded", "flat"], default="flat")
    args = parser.parse_args()
    start = datetime(2025, 1, 1, tzinfo=timezone.utc)
    step = timedelta(days=365) / (args.commits * PER_COMMIT)
    parent, segments = None, []
    for c in range(args.commits):
        lines, first = [], None
        for w in range(PER_COMMIT):
            n = c * PER_COMMIT + w
            at = (start + step * n).strftime("%Y-%m-%dT%H:%M:%SZ")
            parent, line = seal(parent, at, n)
            lines.append(line)
            first = first or (parent, at)
        segments.append((first, "".join(lines)))
    if args.files:
        per_file = -(-len(segments) // args.files)
        segments = [(segments[at][0], "".join(s for _, s in segments[at:at + per_file]))
                    for at in range(0, len(segments), per_file)]
        commits = [segments]
    else:
        commits = [[s] for s in segments]
    stream = bytearray()
    when = int(start.timestamp())
    for at, files in enumerate(commits):
        message = f"write {(at + 1) * PER_COMMIT}".encode()
        stream += b"commit refs/heads/main\n"
        stream += f"committer bench <bench@example.com> {when + at * 60} +0000\n".encode()
        stream += b"data %d\n%s\n" % (len(message), message)
        if at == 0:
            stream += b"from refs/heads/main^0\n"
        for (first_id, first_at), content in files:
            path = segment_path(first_id, first_at, args.layout, len(stream))
            data = content.encode()
            stream += f"M 100644 inline .epiphany/rollout/{path}\n".encode()
            stream += b"data %d\n%s\n" % (len(data), data)
    subprocess.run(["git", "fast-import", "--quiet"], cwd=args.repo, input=bytes(stream), check=True)
    subprocess.run(["git", "reset", "-q", "--hard", "main"], cwd=args.repo, check=True)
    print(parent)


if __name__ == "__main__":
    sys.exit(main())
