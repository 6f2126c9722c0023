"""What the server says about itself: its name, its instructions to the model and its resource URIs.

Kept free of imports: the assembly, the resources and the OpenAI bridge all read it.
"""

from __future__ import annotations

from typing import Final

SERVER_NAME: Final = "repo-sandbox"
POLICY_URI: Final = "repo-sandbox://policy"
STATUS_URI: Final = "repo-sandbox://status"

INSTRUCTIONS: Final = """Read-only access to one code repository, behind a policy (path jail, deny-list, size limits).
Paths are relative to the repository root. Find files with search_files, search contents with search_text,
read with read_file (by line range), measure with count_lines; execute_bash runs one allowlisted read-only
command or '|' pipeline (git log/diff/show/blame, sort | uniq -c, jq, ...) in a sandbox, without a shell. Every failure is a JSON error with a
`category` telling you what to do next, a `hint`, and `retryable`. Listing results are paged: when
`truncated` is true, pass `next_offset` as `offset`. A call that keeps failing is blocked for a while
(`circuit_open`): change the approach. Read repo-sandbox://policy for what is allowed and
repo-sandbox://status for this session's budget and blocked calls."""
