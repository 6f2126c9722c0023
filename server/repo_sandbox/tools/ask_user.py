"""ask_user: the agent asks the human 1-3 questions through the client (MCP elicitation) and gets the answers.

Listed only to clients that can show a form to their user. Declining or cancelling is an ordinary result
(`status`), never an error and never a hang: a live question that gets no answer in time counts as cancelled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from repo_sandbox.calls import Elicit
from repo_sandbox.errors import ApprovalRequiredError
from repo_sandbox.tools._results import ResultModel
from repo_sandbox.workspace import Workspace

if TYPE_CHECKING:
    from repo_sandbox.calls import CallContext

DESCRIPTION = """Ask the user 1-3 short questions and wait for the answers, when you cannot go on without them.

Use it for what only the user knows (which approach they want, a name, a missing requirement), not for
what the repository tells you. Offer `choices` when the answer is one of a few options. The result is
[answered] with the answers, or [declined] / [cancelled]: then go on without (assume, and say so) and do
not ask again.

Example: {"questions": [{"question": "Which package should I document first?", "choices": ["core", "cli"]}]}
Common mistake: one question per call; ask everything you need at once (up to 3 questions).
"""

AskStatus = Literal["answered", "declined", "cancelled"]


class Question(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: Annotated[str, Field(min_length=1, max_length=1000, description="The question, in one sentence.")]
    choices: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=200)]] | None,
        Field(min_length=2, max_length=20, description="Allowed answers, when the answer is one of a few options."),
    ] = None

    @model_validator(mode="after")
    def _choices_unique(self) -> Question:
        if self.choices is not None and len(set(self.choices)) != len(self.choices):
            raise ValueError("choices must be unique")
        return self


class AskUserArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    questions: Annotated[
        list[Question],
        Field(min_length=1, max_length=3, description="1 to 3 questions, asked together in one form."),
    ]


class Answer(ResultModel):
    question: str
    answer: str | None = Field(description="The user's answer; null if left empty or not one of the choices.")


class AskUserResult(ResultModel):
    status: AskStatus = Field(description="'answered', or 'declined'/'cancelled' when the user gave no answers.")
    answers: list[Answer] = Field(description="One entry per question, in order (empty unless answered).")
    note: str = Field(description="What to do with this result.")


def answer_field(index: int) -> str:
    return f"answer_{index + 1}"


def requested_schema(questions: list[Question]) -> dict[str, Any]:
    """A flat form: one string field per question, an enum when the question has choices."""
    properties: dict[str, Any] = {}
    for index, question in enumerate(questions):
        field: dict[str, Any] = {"type": "string", "title": f"Question {index + 1}", "description": question.question}
        if question.choices is not None:
            field["enum"] = list(question.choices)
        properties[answer_field(index)] = field
    return {"type": "object", "properties": properties, "required": list(properties)}


def elicitation_message(questions: list[Question]) -> str:
    lines = ["The agent working in your repository asks:"]
    lines += [f"{index + 1}. {q.question}" for index, q in enumerate(questions)]
    return "\n".join(lines)


def _answer(question: Question, value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    text = str(value).strip()
    if not text or (question.choices is not None and text not in question.choices):
        return None
    return text


async def ask_user(ws: Workspace, args: AskUserArgs, context: CallContext) -> AskUserResult:
    """Raises: ApprovalRequiredError when the client cannot show questions to its user."""
    del ws
    elicit: Elicit | None = context.elicit
    if elicit is None:
        raise ApprovalRequiredError(
            "ask_user needs a client that can show questions to its user (MCP elicitation); this one cannot.",
            hint="Continue without asking: make a reasonable assumption and state it, or ask in your final reply.",
        )
    reply = await elicit(elicitation_message(args.questions), requested_schema(args.questions))
    if reply.action == "decline":
        return AskUserResult(
            status="declined",
            answers=[],
            note="The user declined to answer. Continue without this information; do not ask the same again.",
        )
    if reply.action == "cancel":
        return AskUserResult(
            status="cancelled",
            answers=[],
            note="The user dismissed the questions. Continue without this information, or finish and ask in your reply.",
        )
    content = reply.content or {}
    answers = [
        Answer(question=q.question, answer=_answer(q, content.get(answer_field(i))))
        for i, q in enumerate(args.questions)
    ]
    missing = sum(a.answer is None for a in answers)
    note = "The user answered." if not missing else f"The user answered; {missing} answer(s) were left empty."
    return AskUserResult(status="answered", answers=answers, note=note)
