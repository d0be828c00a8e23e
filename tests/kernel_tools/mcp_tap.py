"""A tap in front of an MCP stdio server, for tests: ``python mcp_tap.py LOG COMMAND ARGS...`` starts the
server and copies the lines between it and its client both ways, appending each to LOG as
``>> line`` (from the client: the agent's MCP client) or ``<< line`` (from the server), after a first
``# started`` line. Stdlib only."""

from __future__ import annotations

import subprocess
import sys
import threading


def main() -> None:
    log_path, command = sys.argv[1], sys.argv[2:]
    with open(log_path, "ab") as log:
        log.write(b"# started\n")
    server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert server.stdin is not None and server.stdout is not None
    lock = threading.Lock()

    def note(prefix: str, line: bytes) -> None:
        with lock, open(log_path, "ab") as log:
            log.write(prefix + line.rstrip(b"\n") + b"\n")

    def server_to_client() -> None:
        assert server.stdout is not None
        for line in server.stdout:
            note(b"<< ", line)
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()

    pump = threading.Thread(target=server_to_client, daemon=True)
    pump.start()
    for line in sys.stdin.buffer:
        note(b">> ", line)
        server.stdin.write(line)
        server.stdin.flush()
    server.stdin.close()
    server.wait()
    pump.join(timeout=5)


if __name__ == "__main__":
    main()
