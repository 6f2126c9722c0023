"""A full disk never tears an audit line: a batch is written whole or not at all, and once space returns
every line of the file parses. The disk fills for real: a child process writes under a file-size limit
(RLIMIT_FSIZE: the kernel writes what fits, then refuses with EFBIG, as a full file system does with ENOSPC),
then lifts the limit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

CHILD = r"""
import json, resource, sys
from repo_sandbox.audit.log import AuditLog
from repo_sandbox.config.model import AuditConfig

path, limit = sys.argv[1], int(sys.argv[2])
_, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
log = AuditLog(AuditConfig(path=path, max_bytes=1 << 30, backup_count=1, redact=False))
for n in range(300):
    log.emit({"event": "tool_call", "n": n, "pattern": "p" * (n % 97 * 3)})
    if n % 5 == 0:
        log.flush(5)
log.flush(5)
full = log.health()
resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))  # space returns
for n in range(300, 340):
    log.emit({"event": "tool_call", "n": n, "pattern": "after"})
log.flush(5)
after = log.health()
log.close()
print(json.dumps({"full": full, "after": after}))
"""


@pytest.mark.parametrize("limit", [4096, 10_000, 20_001])
def test_a_full_disk_leaves_only_whole_lines(tmp_path: Path, limit: int) -> None:
    path = tmp_path / "audit.jsonl"
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), str(limit)], capture_output=True, text=True, timeout=60, check=True
    )
    report = json.loads(result.stdout)
    assert report["full"]["failed"] > 0 and report["full"]["healthy"] is False
    assert report["after"]["healthy"] is True
    data = path.read_bytes()
    assert data.endswith(b"\n")
    events = [json.loads(line) for line in data.decode().splitlines()]  # every line parses
    numbers = [event["n"] for event in events]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
    assert numbers[-40:] == list(range(300, 340)), "everything after space returned is written"
    assert len(events) == report["after"]["written"]
