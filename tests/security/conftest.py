"""Fixtures for the attack tables: one hostile tree per session, one workspace per jail backend."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from attack_tree import BACKENDS, AttackTree, OpenAt2MissingError, build, workspace_for

from repo_sandbox.workspace import Workspace


@pytest.fixture(scope="session")
def attack_tree(tmp_path_factory: pytest.TempPathFactory) -> AttackTree:
    return build(tmp_path_factory.mktemp("attack"))


@pytest.fixture(scope="module", params=BACKENDS)
def backend_ws(request: pytest.FixtureRequest, attack_tree: AttackTree) -> Iterator[Workspace]:
    """A workspace over the attack tree, once per jail backend (openat2 / walk, with and without /proc)."""
    backend: str = request.param
    try:
        with workspace_for(attack_tree, backend) as ws:
            yield ws
    except OpenAt2MissingError:
        pytest.skip("openat2 is not available on this kernel; the walk backends cover the jail here")
