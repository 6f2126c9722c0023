"""The official MCP conformance suite (pinned, Node 22) against `repo-sandbox serve --transport http`.

Run without a token on 127.0.0.1 (the suite cannot send one). Only the scenarios that apply to a server
with no prompts, resources, sampling or elicitation fixtures are required; docs/transports.md lists the others.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from harness import running_subprocess
from nodetools import CONFORMANCE, node22_env

pytestmark = pytest.mark.e2e

REQUIRED: dict[str, set[str]] = {
    "2025-11-25": {
        "server-initialize",
        "server-session-lifecycle",
        "ping",
        "tools-list",
        "server-sse-multiple-streams",
        "resources-list",
        "prompts-list",
        "dns-rebinding-protection",
    },
    "2026-07-28": {
        "server-stateless",
        "tools-list",
        "server-sse-multiple-streams",
        "resources-list",
        "prompts-list",
        "sep-2164-resource-not-found",
        "dns-rebinding-protection",
        "caching",
        "http-header-validation",
        "input-required-result-unsupported-methods",
    },
}

FIXTURE_CHECKS = {
    ("server-stateless", "sep-2575-server-rejects-undeclared-capability"),
    ("server-stateless", "sep-2575-missing-capability-http-400"),
}
"""Checks that call the suite's own diagnostic tool (`test_missing_capability`), which we do not ship."""


def run_suite(url: str, spec_version: str, out: Path) -> dict[str, list[dict[str, Any]]]:
    subprocess.run(
        [str(CONFORMANCE), "server", "--url", url, "--suite", "all", "--spec-version", spec_version, "-o", str(out)],
        check=False,  # non-zero whenever any scenario fails, and many need fixtures we do not have
        env=node22_env(),
        capture_output=True,
        timeout=300,
    )
    checks: dict[str, list[dict[str, Any]]] = {}
    for result in out.glob("server-*/checks.json"):
        scenario = re.sub(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$", "", result.parent.name.removeprefix("server-"))
        checks[scenario] = json.loads(result.read_text())
    return checks


@pytest.fixture(scope="module")
def suite_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, list[dict[str, Any]]]]:
    base = tmp_path_factory.mktemp("conformance")
    (base / "repo").mkdir()
    (base / "repo" / "README.md").write_text("# demo\n")
    with running_subprocess(base / "repo", base / "server.log", token=None) as server:
        return {version: run_suite(server.mcp_url, version, base / version) for version in REQUIRED}


@pytest.mark.parametrize(
    ("spec_version", "scenario"),
    [(version, scenario) for version, scenarios in REQUIRED.items() for scenario in sorted(scenarios)],
)
def test_conformance_scenario_passes(
    suite_results: dict[str, dict[str, list[dict[str, Any]]]], spec_version: str, scenario: str
) -> None:
    checks = suite_results[spec_version].get(scenario)
    assert checks, f"{scenario} did not run at {spec_version}"
    failures = [
        (check["id"], check.get("errorMessage"))
        for check in checks
        if check["status"] == "FAILURE" and (scenario, check["id"]) not in FIXTURE_CHECKS
    ]
    assert failures == []
    assert any(check["status"] == "SUCCESS" for check in checks)


def test_every_message_the_server_sent_in_the_whole_suite_is_schema_valid(
    suite_results: dict[str, dict[str, list[dict[str, Any]]]],
) -> None:
    for version, scenarios in suite_results.items():
        for scenario, checks in scenarios.items():
            for check in checks:
                if check["id"] == "wire-schema-valid":
                    assert check["status"] == "SUCCESS", (version, scenario, check.get("details"))
