# repo-sandbox-mcp: one container per repository.
#
#   stdio (Claude Desktop and other local clients):
#     docker run -i --rm --network none --read-only --cap-drop ALL --security-opt no-new-privileges \
#       --pids-limit 64 --memory 256m -v "$PWD:/workspace:ro" repo-sandbox-mcp
#   Streamable HTTP at /mcp and WebSocket at /ws (a token is required off loopback):
#     docker run --rm -p 127.0.0.1:8765:8765 -e REPO_SANDBOX_TOKEN ... repo-sandbox-mcp \
#       serve --transport http --host 0.0.0.0
#
# BASE_IMAGE needs python3 (3.11+); a Debian image without it gets python3 from apt. scripts/container-image
# builds a Debian bookworm base with debootstrap (python3, bubblewrap and ripgrep included) for hosts
# without a reachable image registry.
ARG BASE_IMAGE=debian:bookworm-slim

FROM ${BASE_IMAGE} AS build
RUN if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then \
      apt-get update && apt-get install -y --no-install-recommends python3 python3-venv \
      && rm -rf /var/lib/apt/lists/*; \
    fi
# The context holds the sources and, when scripts/container-image prepared them, the wheels of the package
# and its dependencies (.tools/container/wheels): then the build needs no network at all.
COPY . /src
RUN python3 -m venv /opt/repo-sandbox \
    && if [ -d /src/.tools/container/wheels ]; then \
         /opt/repo-sandbox/bin/pip install --no-cache-dir --disable-pip-version-check --no-index \
           --find-links /src/.tools/container/wheels repo-sandbox-mcp; \
       else \
         /opt/repo-sandbox/bin/pip install --no-cache-dir --disable-pip-version-check /src; \
       fi \
    && /opt/repo-sandbox/bin/pip uninstall -y --disable-pip-version-check pip \
    && python3 -m compileall -q /opt/repo-sandbox

FROM ${BASE_IMAGE}
# Every program of execute_bash's default allowlist (git, gawk, jq, tree, file, column, diff, ...), and the
# coreutils/bsdextrautils/xxd extras, so that what the tool description offers runs. A base that already has
# them all (scripts/container-image's) needs no apt-get, hence no network.
ARG PACKAGES="python3 bubblewrap ripgrep git gawk jq tree file bsdextrautils diffutils findutils coreutils xxd"
ARG PROGRAMS="python3 bwrap rg git gawk jq tree file column hexdump diff find xxd base64 sha256sum numfmt"
RUN missing=""; for program in $PROGRAMS; do command -v "$program" >/dev/null || missing="$missing $program"; done; \
    if [ -n "$missing" ]; then \
      echo "installing for:$missing" \
      && apt-get update && apt-get install -y --no-install-recommends $PACKAGES \
      && rm -rf /var/lib/apt/lists/*; \
    fi \
    && groupadd --system --gid 10001 sandbox \
    && useradd --system --uid 10001 --gid 10001 --home-dir /nonexistent --shell /usr/sbin/nologin sandbox \
    && mkdir -p /workspace
COPY --from=build /opt/repo-sandbox /opt/repo-sandbox
ENV PATH=/opt/repo-sandbox/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    REPO_SANDBOX_WORKSPACE_ROOT=/workspace
WORKDIR /workspace
USER 10001:10001
EXPOSE 8765
ENTRYPOINT ["repo-sandbox"]
CMD ["serve"]
