"""An "agent" that builds a process tree and reports it: itself, a child in its process group, and a
grandchild that left the group with ``setsid()`` (the case process-group kills miss).

It speaks no ACP: it writes one JSON-RPC notification ``{"method": "pids", "params": {"agent",
"child", "grandchild"}}`` on stdout once the whole tree runs, then reads stdin to EOF.

Flags (any order):
- ``--ignore-eof``: keep running after stdin EOF (as codex-acp does).
- ``--ignore-term``: the agent, its child and the grandchild all ignore SIGTERM (need SIGKILL).
- ``--exit N``: at stdin EOF, write two stderr lines and exit with code N (leaving the tree behind).
- ``--kill-parent``: once the pids are out, SIGKILL its own parent (whatever process that is).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

IGNORE_EOF = "--ignore-eof" in sys.argv
IGNORE_TERM = "--ignore-term" in sys.argv
KILL_PARENT = "--kill-parent" in sys.argv
EXIT_CODE = int(sys.argv[sys.argv.index("--exit") + 1]) if "--exit" in sys.argv else 0

# The grandchild: leaves the process group and session, then sleeps.
GRANDCHILD = """
import os, signal, sys, time
if sys.argv[1] == "1":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
os.setsid()
print(os.getpid(), flush=True)
time.sleep(120)
"""

# The child: stays in the agent's group, starts the grandchild, reports its pid, sleeps.
CHILD = """
import signal, subprocess, sys, time
if sys.argv[1] == "1":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
grandchild = subprocess.Popen([sys.executable, "-c", sys.argv[2], sys.argv[1]], stdout=subprocess.PIPE,
                              stdin=subprocess.DEVNULL)
print(grandchild.stdout.readline().decode().strip(), flush=True)
time.sleep(120)
"""


def main() -> None:
    if IGNORE_TERM:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    flag = "1" if IGNORE_TERM else "0"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, flag, GRANDCHILD], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL
    )
    assert child.stdout is not None
    grandchild = int(child.stdout.readline())
    pids = {"agent": os.getpid(), "child": child.pid, "grandchild": grandchild}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "method": "pids", "params": pids}) + "\n")
    sys.stdout.flush()
    if KILL_PARENT:
        os.kill(os.getppid(), signal.SIGKILL)
    sys.stdin.read()
    if IGNORE_EOF:
        while True:
            time.sleep(60)
    sys.stderr.write("tree-agent: stdin closed\ntree-agent: exiting\n")
    sys.stderr.flush()
    sys.exit(EXIT_CODE)


if __name__ == "__main__":
    main()
