"""Approval of one command by the user (exec rules whose decision is "ask"), over elicitation.

The provider: `CallContext.approve`, `await approve(command_text, details) -> bool`, present only
when the client can ask its user (else a program in `exec.ask` fails closed with `approval_required`).
It shows the exact command; accept with "approve" ticked runs it, anything else (decline, cancel, an
unticked box, no answer) is False (`approval_denied`). An approval covers that one call only: nothing is
remembered, and in the 2026-07-28 era the answer is bound to the exact call and accepted once
(see `runtime.elicitation`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from repo_sandbox.calls import Approve, Elicit

APPROVAL_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "approve": {
            "type": "boolean",
            "title": "Run this exact command once",
            "description": "Tick to allow this one run. The agent must ask again for any other command.",
        }
    },
    "required": ["approve"],
}

_MAX_DETAIL_CHARS: Final = 300


def display_command(command: str) -> str:
    """The command exactly as it will run; escaped (as a JSON string) if it holds line breaks or control
    characters, so that nothing in it can pass for the surrounding text of the question."""
    if command.isprintable():
        return command
    return json.dumps(command) + "   (shown escaped: it contains line breaks or control characters)"


def approval_message(command: str, details: Mapping[str, Any]) -> str:
    lines = [
        "The agent wants to run this command in the repository sandbox:",
        "",
        f"    {display_command(command)}",
        "",
    ]
    for key, value in details.items():
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        text = display_command(text)
        if len(text) > _MAX_DETAIL_CHARS:
            text = text[: _MAX_DETAIL_CHARS - 1] + "…"
        lines.append(f"{display_command(str(key))}: {text}")
    lines.append("Allow this one run? Your answer covers only this call.")
    return "\n".join(lines)


def make_approve(elicit: Elicit) -> Approve:
    async def approve(command: str, details: Mapping[str, Any]) -> bool:
        answer = await elicit(approval_message(command, details), APPROVAL_SCHEMA)
        return answer.action == "accept" and answer.content is not None and answer.content.get("approve") is True

    return approve
