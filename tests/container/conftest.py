"""The container tests need a built image: `scripts/test-container` builds it and runs them (CI runs that
script after `scripts/test`). Without REPO_SANDBOX_TEST_IMAGE they are deselected, not skipped."""

from __future__ import annotations

import os

import pytest

IMAGE_VARIABLE = "REPO_SANDBOX_TEST_IMAGE"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get(IMAGE_VARIABLE):
        return
    here = os.path.dirname(__file__)
    container_items = [item for item in items if str(item.path).startswith(here)]
    if container_items:
        config.hook.pytest_deselected(items=container_items)
        items[:] = [item for item in items if item not in container_items]
