#!/usr/bin/env python3
"""How well `epiphany map --focus FILE` ranks the files that change together with FILE.

The judge is the repository's own history: two files are related when commits changed both
(commits touching more than MAX_COMMIT_FILES files are skipped as sweeping). For each focus
file with at least MIN_PARTNERS partners changed with it in MIN_SHARED or more commits, the
map's ranking (the focus itself left out) is scored against those partners: precision in the
first 10, recall in the first 20, and the reciprocal rank of the first partner. The map never
reads the history, so the judge cannot leak into what it judges.

Usage: map-quality.py CORPUS BINARY [BINARY...]

CORPUS is a git work tree (a store is created in it when missing). Every binary indexes the
corpus before it is judged, so binaries whose outlines differ are compared fairly. Prints one
line per binary: focus files judged, mean P@10, mean R@20, MRR, and the files that appear
most often in the first 10 without being partners (the map's noise).
"""

import collections
import hashlib
import json
import os
import shutil
import subprocess
import sys

MAX_COMMIT_FILES = 12
MIN_SHARED = 2
MIN_PARTNERS = 3
MAX_FOCUSES = 80
PARSED = (".rs", ".py", ".pyi", ".js", ".jsx", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".tsx",
          ".go", ".java", ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx")


def git(corpus, *args):
    return subprocess.run(["git", "-C", corpus, *args], check=True, capture_output=True,
                          text=True).stdout


def partners(corpus):
    """For each parsed file present now, the parsed files changed with it, with counts."""
    present = set(git(corpus, "ls-files").splitlines())
    log = git(corpus, "log", "--no-merges", "--no-renames", "--name-only", "--format=format:@@")
    shared = collections.defaultdict(collections.Counter)
    for commit in log.split("@@"):
        files = sorted({f for f in commit.split() if f.endswith(PARSED) and f in present})
        if not 2 <= len(files) <= MAX_COMMIT_FILES:
            continue
        for a in files:
            for b in files:
                if a != b:
                    shared[a][b] += 1
    judged = {}
    for focus, counts in shared.items():
        related = {path for path, count in counts.items() if count >= MIN_SHARED}
        if len(related) >= MIN_PARTNERS:
            judged[focus] = related
    # A fixed sample, the same for every binary and every run.
    chosen = sorted(judged, key=lambda path: hashlib.sha1(path.encode()).hexdigest())
    return {focus: judged[focus] for focus in chosen[:MAX_FOCUSES]}


def ranking(binary, corpus, focus):
    out = subprocess.run([binary, "-C", corpus, "map", "--json", "--focus", focus,
                          "--max-chars", "200000"], capture_output=True, text=True)
    if out.returncode != 0:
        return None
    return [f["path"] for f in json.loads(out.stdout)["files"] if f["path"] != focus]


def judge(binary, corpus, truth):
    subprocess.run([binary, "-C", corpus, "init"], capture_output=True)
    # `index --full` keeps the outlines of unchanged files when its parsers' version matches;
    # two builds of one version may still parse differently, so each starts from no index.
    shutil.rmtree(os.path.join(corpus, ".epiphany", "cache"), ignore_errors=True)
    subprocess.run([binary, "-C", corpus, "index", "--full"], check=True, capture_output=True)
    precision, recall, reciprocal = [], [], []
    noise = collections.Counter()
    for focus, related in truth.items():
        ranked = ranking(binary, corpus, focus)
        if ranked is None:
            continue
        top = ranked[:10]
        precision.append(sum(path in related for path in top) / 10)
        recall.append(sum(path in related for path in ranked[:20]) / len(related))
        first = next((rank for rank, path in enumerate(ranked, 1) if path in related), None)
        reciprocal.append(1 / first if first else 0.0)
        noise.update(path for path in top if path not in related)
    count = len(precision)
    mean = lambda values: sum(values) / max(len(values), 1)
    print(f"{binary}: {count} focus files, P@10 {mean(precision):.3f}, "
          f"R@20 {mean(recall):.3f}, MRR {mean(reciprocal):.3f}")
    print("  most frequent non-partners in the first 10: " +
          ", ".join(f"{path} ({times})" for path, times in noise.most_common(5)))


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    corpus, binaries = sys.argv[1], sys.argv[2:]
    truth = partners(corpus)
    print(f"{corpus}: {len(truth)} focus files with >= {MIN_PARTNERS} partners")
    for binary in binaries:
        judge(binary, corpus, truth)


if __name__ == "__main__":
    main()
