"""The Kubernetes example is valid, hardened, and uses configuration keys that exist."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from repo_sandbox.config.loader import load_settings

MANIFEST = Path(__file__).resolve().parents[1] / "deploy" / "kubernetes" / "repo-sandbox.yaml"


def documents() -> dict[str, dict[str, Any]]:
    return {doc["kind"]: doc for doc in yaml.safe_load_all(MANIFEST.read_text()) if doc}


def test_manifest_has_a_deployment_a_service_and_a_network_policy() -> None:
    kinds = documents()
    assert set(kinds) == {"Deployment", "Service", "NetworkPolicy"}
    deployment, service = kinds["Deployment"], kinds["Service"]
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    assert kinds["NetworkPolicy"]["spec"]["egress"] == []


def test_deployment_is_hardened_and_mounts_the_repository_read_only() -> None:
    pod = documents()["Deployment"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["automountServiceAccountToken"] is False
    context = container["securityContext"]
    assert context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False
    assert context["capabilities"]["drop"] == ["ALL"]
    repo_mount = next(m for m in container["volumeMounts"] if m["mountPath"] == "/workspace")
    assert repo_mount["readOnly"] is True
    repo_volume = next(v for v in pod["volumes"] if v["name"] == repo_mount["name"])
    assert repo_volume["persistentVolumeClaim"]["readOnly"] is True
    assert container["readinessProbe"]["httpGet"]["path"] == "/healthz"
    assert pod["terminationGracePeriodSeconds"] > 10  # above the default shutdown_grace_s


def test_secrets_come_from_a_secret_and_settings_are_real_config_keys(tmp_path: Path) -> None:
    (container,) = documents()["Deployment"]["spec"]["template"]["spec"]["containers"]
    env = {item["name"]: item for item in container["env"]}
    assert env["REPO_SANDBOX_TOKEN"]["valueFrom"]["secretKeyRef"]["key"] == "token"
    assert env["REPO_SANDBOX_STATE_KEY"]["valueFrom"]["secretKeyRef"]["key"] == "state-key"
    plain = {name: item["value"] for name, item in env.items() if "value" in item}
    settings = load_settings(None, env={**plain, "REPO_SANDBOX_WORKSPACE_ROOT": str(tmp_path)})
    assert "repo-sandbox-myrepo.tools.svc" in settings.server.allowed_hosts
    assert container["args"][:3] == ["serve", "--transport", "http"]
