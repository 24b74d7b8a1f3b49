#!/usr/bin/env python3
"""How fast a cancelled `index` or `retrieve` lets go, over the MCP server (issue 50).

In a repository of 2,000 source files (each a few hundred lines), an MCP session starts a full
`index`, cancels it after a delay with `notifications/cancelled`, and sends a `log` call at once.
Prints, over several rounds, the median time from the cancel to the `log` answer (target: the
cancelled index stops within 1 s and the next call is answered within 0.1 s of that), and
checks that the cancelled index committed nothing.

Then, in a repository of 20,000 such files and no index, a `retrieve` (which then searches the
work tree) is cancelled a third of the way through: prints the median time from the cancel to
the `log` answer, and to the server's exit once its input is closed, which waits for the
cancelled call to end (a `retrieve` that heeds the cancel ends at its next file; one that does
not runs to its end).

Usage: bench/mcp-cancel.py [path/to/epiphany] [rounds]
       (default: target/release/epiphany, 7 rounds)
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "target/release/epiphany")
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 7
# Long enough for the index to be well under way, short of its end.
CANCEL_AFTER_SECONDS = 0.3


def repository(root, files=2000):
    subprocess.run(["git", "init", "-q", root], check=True)
    for n in range(files):
        body = "".join(
            f"pub fn step_{n}_{k}(x: u64) -> u64 {{\n    x.wrapping_mul({k}) + {n}\n}}\n\n"
            for k in range(60)
        )
        path = os.path.join(root, "src", f"m{n // 100}", f"f{n}.rs")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as out:
            out.write(body)
    subprocess.run([BIN, "-C", root, "init"], check=True, capture_output=True)


def send(server, message):
    server.stdin.write((json.dumps(message) + "\n").encode())
    server.stdin.flush()


def receive(server):
    return json.loads(server.stdout.readline())


def start(root):
    server = subprocess.Popen(
        [BIN, "-C", root, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    send(server, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}})
    receive(server)
    return server


def cancel_and_ask(server, cancel_after):
    """After `cancel_after` seconds, cancels call 2 and asks for `log`: the seconds from the
    cancel to the `log` answer, and to the server's exit once its input is closed (after the
    cancelled call has ended)."""
    time.sleep(cancel_after)
    cancelled = time.monotonic()
    send(server, {"jsonrpc": "2.0", "method": "notifications/cancelled",
                  "params": {"requestId": 2, "reason": "bench"}})
    send(server, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                  "params": {"name": "log", "arguments": {}}})
    answer = receive(server)
    answered = time.monotonic() - cancelled
    assert answer["id"] == 3, f"the cancelled call was answered: {answer}"
    server.stdin.close()
    server.wait()
    return answered, time.monotonic() - cancelled


def retrieve_round(root, cancel_after):
    """Seconds from the cancel of a running `retrieve` to the next call's answer, and to the
    server's exit once its input is closed (after the cancelled call has ended)."""
    server = start(root)
    send(server, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                  "params": {"name": "retrieve", "arguments": {"query": QUERY}}})
    return cancel_and_ask(server, cancel_after)


# Words on every line of the generated files: every file matches, and is tokenized.
QUERY = "step wrapping mul"


def retrieve_bench():
    with tempfile.TemporaryDirectory() as root:
        repository(root, files=20000)
        started = time.monotonic()
        subprocess.run([BIN, "-C", root, "retrieve", QUERY], check=True, capture_output=True)
        whole = time.monotonic() - started
        rounds = [retrieve_round(root, whole / 3) for _ in range(ROUNDS)]
    answered = statistics.median(a for a, _ in rounds)
    ended = statistics.median(e for _, e in rounds)
    print(f"a whole retrieve of 20,000 files without an index: {whole:.2f} s")
    print(f"retrieve cancelled after {whole / 3:.2f} s, median of {ROUNDS}: next call answered "
          f"{answered:.3f} s after the cancel, server exited {ended:.3f} s after it "
          f"(max {max(e for _, e in rounds):.3f} s)")


def one_round(root):
    server = subprocess.Popen(
        [BIN, "-C", root, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    send(server, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}})
    receive(server)
    send(server, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                  "params": {"name": "index", "arguments": {"full": True}}})
    answered, _ = cancel_and_ask(server, CANCEL_AFTER_SECONDS)
    return answered


def main():
    with tempfile.TemporaryDirectory() as root:
        repository(root)
        started = time.monotonic()
        subprocess.run([BIN, "-C", root, "index", "--full"], check=True, capture_output=True)
        whole = time.monotonic() - started
        subprocess.run(["rm", "-rf", os.path.join(root, ".epiphany", "cache", "retrieval")],
                       check=True)
        waits = [one_round(root) for _ in range(ROUNDS)]
        status = subprocess.run([BIN, "-C", root, "--json", "index", "--check"],
                                capture_output=True)
        indexed = json.loads(status.stdout).get("indexed_file_count")
    print(f"a whole index of 2,000 files: {whole:.2f} s")
    print(f"cancel -> next call answered, median of {ROUNDS}: {statistics.median(waits):.3f} s "
          f"(max {max(waits):.3f} s)")
    print(f"files indexed after the cancelled runs: {indexed} (none expected)")
    retrieve_bench()


if __name__ == "__main__":
    main()
