"""Times commands in interleaved rounds, for the benches that compare two commands.

Usage: python3 bench/pairs.py ROUNDS NAME DIR COMMAND [NAME DIR COMMAND]...

Runs the steps in turn, ROUNDS times after one warm-up round, and prints each timed step's
median wall and CPU (user + system of its children) seconds as `NAME<TAB>WALL<TAB>CPU`. A
step's COMMAND is split as a shell would split it and run without a shell, in DIR; a step
named `-` is run but not timed (a preparation). On a shared machine a command's time swings
with the load: interleaved, the two commands of a ratio see the same load, which two series
measured a minute apart do not (1.6x to 2.5x for one ratio on one quiet machine).
"""
import resource
import shlex
import statistics
import subprocess
import sys
import time

rounds, args = int(sys.argv[1]), sys.argv[2:]
steps = [args[at:at + 3] for at in range(0, len(args), 3)]
times = {}
for round in range(rounds + 1):
    for name, cwd, command in steps:
        before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        subprocess.run(shlex.split(command), cwd=cwd, stdout=subprocess.DEVNULL, check=True)
        wall, after = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        if name != "-" and round > 0:
            times.setdefault(name, []).append((wall, cpu))
for name, pairs in times.items():
    print(f"{name}\t{statistics.median(w for w, _ in pairs)}\t{statistics.median(c for _, c in pairs)}")
