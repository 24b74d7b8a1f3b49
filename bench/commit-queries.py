#!/usr/bin/env python3
"""Build an extra commit-derived query set, to check that ranking changes generalize beyond
the development set (same shape as ../shared/bench/ripgrep.queries.jsonl).

The snapshot is the commit N first-parent steps before HEAD; each later first-parent commit
(merge commits are diffed against their first parent) whose diff touches 1-4 source files
that exist in the snapshot, and at most 8 files overall, becomes a query: its subject line,
with those source files as the relevant paths. Release and dependency-bump commits are left
out.

Usage: commit-queries.py GIT_DIR STEPS_BACK MAX_QUERIES OUT.jsonl
Then:  git --git-dir GIT_DIR archive SNAPSHOT | tar -x -C CORPUS   (SNAPSHOT is printed)

Used for the nushell (600 back) and rust-lang/cargo (700 back) sets quoted in commit messages.
"""
import json
import subprocess
import sys

SOURCE = (".rs", ".py", ".js", ".jsx", ".ts", ".tsx", ".go", ".java", ".sh", ".zsh", ".nu", ".c", ".h", ".cc", ".cpp",
          ".hpp")
SKIP = ("bump", "merge", "release", "chore(deps)", "build(deps)")


def main() -> int:
    git_dir, steps_back, max_queries, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]

    def git(*args: str) -> str:
        return subprocess.run(["git", "--git-dir", git_dir, *args], capture_output=True, text=True).stdout

    revisions = git("rev-list", "--first-parent", "HEAD").split()
    snapshot = revisions[steps_back]
    present = set(git("ls-tree", "-r", "--name-only", snapshot).splitlines())
    queries = []
    for commit in reversed(revisions[:steps_back]):
        subject = git("log", "-1", "--format=%s", commit).strip()
        touched = [p for p in git("diff", "--name-only", commit + "^1", commit).splitlines() if p]
        relevant = [p for p in touched if p.endswith(SOURCE) and p in present]
        if not relevant or len(relevant) > 4 or len(touched) > 8 or subject.lower().startswith(SKIP):
            continue
        queries.append({"commit": commit, "snapshot_commit": snapshot, "query": subject,
                        "relevant_paths": relevant})
        if len(queries) >= max_queries:
            break
    with open(out, "w") as fh:
        for query in queries:
            fh.write(json.dumps(query) + "\n")
    print(snapshot, len(queries))
    return 0


if __name__ == "__main__":
    sys.exit(main())
