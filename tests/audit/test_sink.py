"""The audit sink: size rotation, failures reported in health and never raised, a stuck reader never blocks."""

from __future__ import annotations

import io
import json
import os
import stat
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from repo_sandbox.audit.log import AuditLog
from repo_sandbox.audit.sink import BackgroundWriter, RotatingFileSink, StreamSink
from repo_sandbox.config.model import AuditConfig


def audit_log(path: str, **config: Any) -> AuditLog:
    return AuditLog(AuditConfig(path=path, **config))


def lines_of(*paths: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for path in paths for line in path.read_text(encoding="utf-8").splitlines()]


def test_file_rotates_by_size_and_keeps_backup_count_files(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = audit_log(str(path), max_bytes=2048, backup_count=2)
    for number in range(200):
        assert log.emit({"event": "tool_call", "n": number, "pad": "p" * 60})
    assert log.flush(5)
    health = log.health()
    assert log.close()
    files = sorted(tmp_path.iterdir())
    assert [f.name for f in files] == ["audit.jsonl", "audit.jsonl.1", "audit.jsonl.2"]
    assert all(f.stat().st_size <= 2048 for f in files)
    kept = lines_of(path.with_name("audit.jsonl.2"), path.with_name("audit.jsonl.1"), path)
    numbers = [event["n"] for event in kept]
    assert numbers == list(range(200 - len(numbers), 200)), "the newest events are kept, in order"
    assert health["rotations"] >= 5
    assert health["written"] == 200
    assert health["healthy"] is True


def test_backup_count_zero_starts_the_file_afresh(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = audit_log(str(path), max_bytes=1024, backup_count=0)
    for number in range(50):
        log.emit({"n": number, "pad": "p" * 40})
    assert log.close()
    assert [f.name for f in tmp_path.iterdir()] == ["audit.jsonl"]
    assert lines_of(path)[-1]["n"] == 49
    assert path.stat().st_size <= 1024


def test_audit_file_is_private_to_the_owner(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = audit_log(str(path))
    log.emit({"n": 1})
    assert log.close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_full_disk_is_reported_in_health_and_never_raised() -> None:
    log = audit_log("/dev/full")
    assert log.emit({"n": 1}) is True
    assert log.flush(5)
    health = log.health()
    assert log.close()
    assert health["healthy"] is False
    assert health["failed"] == 1
    assert health["errors"] == 1
    assert "No space left on device" in health["last_error"]


def test_missing_directory_is_reported_then_recovers_when_it_appears(tmp_path: Path) -> None:
    path = tmp_path / "not-yet" / "audit.jsonl"
    log = audit_log(str(path))
    log.emit({"n": 1})
    assert log.flush(5)
    assert log.health()["healthy"] is False
    assert "No such file or directory" in log.health()["last_error"]
    path.parent.mkdir()
    log.emit({"n": 2})
    assert log.flush(5)
    assert log.health()["healthy"] is True
    assert log.close()
    assert lines_of(path) == [{"ts": lines_of(path)[0]["ts"], "n": 2}]


def test_a_path_that_is_a_directory_is_reported(tmp_path: Path) -> None:
    log = audit_log(str(tmp_path))
    log.emit({"n": 1})
    assert log.flush(5)
    assert log.health()["failed"] == 1
    assert log.close()


def test_an_event_that_cannot_be_rendered_is_dropped_whole_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = audit_log(str(path))
    circular: dict[str, Any] = {}
    circular["self"] = circular
    log.emit({"n": 1, "arguments": circular})
    log.emit({"n": 2})
    assert log.flush(5)
    health = log.health()
    assert log.close()
    assert [event["n"] for event in lines_of(path)] == [2]
    assert health["failed"] == 1
    assert health["last_error"] is not None and "cannot prepare event" in health["last_error"]


def test_a_stuck_reader_never_blocks_the_caller_events_are_dropped_and_counted() -> None:
    read_fd, write_fd = os.pipe()
    stream = os.fdopen(write_fd, "w", encoding="utf-8")
    writer = BackgroundWriter(StreamSink(stream), lambda item: (json.dumps(item) + "\n").encode(), queue_size=16)
    started = time.perf_counter()
    accepted = sum(writer.submit({"pad": "p" * 1024}) for _ in range(2000))  # ~2 MB into a 64 KiB pipe
    elapsed = time.perf_counter() - started
    assert elapsed < 2.0
    assert accepted < 2000
    assert writer.counters["dropped"] == 2000 - accepted
    drained = threading.Event()

    def drain() -> None:
        with os.fdopen(read_fd, "rb") as reader:
            while reader.read(65536):
                pass
        drained.set()

    reader_thread = threading.Thread(target=drain)
    reader_thread.start()
    assert writer.flush(10)
    assert writer.close(10)
    stream.close()
    reader_thread.join(10)
    assert drained.is_set()
    assert writer.counters["written"] == accepted


def test_stderr_destination_writes_whole_lines_to_the_stream() -> None:
    stream = io.StringIO()
    log = AuditLog(AuditConfig(path="-"), stream=stream)
    log.emit({"event": "tool_call", "arguments": {"token": "abcdefgh1234"}})
    assert log.close()
    assert json.loads(stream.getvalue())["arguments"] == {"token": "[REDACTED]"}
    assert log.health()["destination"] == "stderr"


def test_audit_off_does_nothing_and_starts_no_thread() -> None:
    before = threading.active_count()
    log = AuditLog(AuditConfig())
    assert log.enabled is False
    assert log.emit({"n": 1}) is False
    assert log.decision("command_denied") is False
    assert threading.active_count() == before
    assert log.health() == {"destination": "off", "path": None, "redact": True, "redact_output": True, "healthy": True}


def test_events_after_close_are_dropped_not_raised(tmp_path: Path) -> None:
    log = audit_log(str(tmp_path / "a.jsonl"))
    assert log.close()
    assert log.emit({"n": 1}) is False
    assert log.health()["dropped"] == 1


@pytest.mark.parametrize("size", [1, 4096, 70_000])
def test_rotation_writes_an_oversized_line_whole(tmp_path: Path, size: int) -> None:
    sink = RotatingFileSink(str(tmp_path / "a.jsonl"), max_bytes=1024, backup_count=1)
    sink.write_lines([b"x" * size + b"\n", b"y\n"])
    sink.close()
    contents = b"".join(p.read_bytes() for p in sorted(tmp_path.iterdir(), reverse=True))
    assert contents == b"x" * size + b"\ny\n"
