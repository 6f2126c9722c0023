"""A call outcome's JSON text is serialised once and describes its own payload, never another outcome's."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from repo_sandbox.runtime.pipeline import CallOutcome, compact_json


def test_the_json_text_is_the_payload_and_is_made_once() -> None:
    outcome = CallOutcome("read_file", {"content": "naïve\n", "n": 1}, is_error=False, duration_ms=1.0)
    text = outcome.to_json()
    assert json.loads(text) == outcome.payload and "naïve" in text
    assert outcome.to_json() is text
    assert outcome.json_bytes() == len(text.encode("utf-8"))


def test_an_outcome_built_from_another_has_its_own_text() -> None:
    outcome = CallOutcome("search_text", {"matches": []}, is_error=False, duration_ms=1.0)
    outcome.to_json()
    changed = dataclasses.replace(outcome, payload={**outcome.payload, "degraded": "files only"})
    assert json.loads(changed.to_json()) == {"matches": [], "degraded": "files only"}
    assert changed == dataclasses.replace(changed)  # the cached text takes no part in equality


def test_lone_surrogates_are_counted_as_written() -> None:
    outcome = CallOutcome("search_files", {"files": ["bad\udcff.txt"]}, is_error=False, duration_ms=1.0)
    assert outcome.json_bytes() == len(outcome.to_json().encode("utf-8", "surrogatepass"))


@pytest.mark.parametrize(
    "value",
    ["naïve 日本 🎉", "\u2028\x00\x1f\x7f", '\\"/', "bad\udcff", 12.5, [1, None, True], {"nested": {"k": "v"}}],
)
def test_compact_json_is_the_text_json_dumps_writes(value: Any) -> None:
    payload = {"value": value}
    assert compact_json(payload) == json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
