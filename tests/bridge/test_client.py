"""The chat-completions client against a real HTTP server: request shape, retries, backoff, errors."""

from __future__ import annotations

import socket
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import anyio
import pytest
from fake_openai import Reply, ScriptedChatServer, answer, error, tool_calls

from conftest import API_KEY, ClientFactory, SleepRecorder
from repo_sandbox.bridge.client import ChatClient, ChatSettings, backoff_delay, parse_retry_after
from repo_sandbox.bridge.errors import ChatRejectedError, ChatResponseError, ChatUnavailableError
from repo_sandbox.bridge.openai import openai_tools
from repo_sandbox.config.loader import load_settings

pytestmark = pytest.mark.anyio

MESSAGES = [{"role": "system", "content": "You read code."}, {"role": "user", "content": "Where is main?"}]


# the request -----------------------------------------------------------------------------------


async def test_chat_with_tools_posts_model_messages_tools_and_tool_choice(
    chat_server: ScriptedChatServer, make_client: ClientFactory
) -> None:
    chat_server.add(answer("It is in main.go."))
    tools = openai_tools()
    async with make_client() as client:
        with anyio.fail_after(10):
            turn = await client.chat_with_tools(MESSAGES, tools, temperature=0)
    assert turn.content == "It is in main.go." and turn.tool_calls == [] and turn.finish_reason == "stop"
    assert turn.message == {"role": "assistant", "content": "It is in main.go."}
    assert turn.usage == {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    [request] = chat_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.body == {
        "model": "scripted-model",
        "messages": MESSAGES,
        "temperature": 0,
        "tools": tools,
        "tool_choice": "auto",
    }
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["user-agent"].startswith("repo-sandbox/")


async def test_no_api_key_sends_no_authorization_header_and_no_tools_sends_no_tool_choice(
    chat_server: ScriptedChatServer, make_client: ClientFactory
) -> None:
    chat_server.add(answer("hi"))
    async with make_client(api_key=None, tool_choice="required") as client:
        with anyio.fail_after(10):
            await client.chat_with_tools(MESSAGES, [])
    [request] = chat_server.requests
    assert "authorization" not in request.headers
    assert "tools" not in request.body and "tool_choice" not in request.body


async def test_tool_choice_comes_from_the_settings_unless_given(
    chat_server: ScriptedChatServer, make_client: ClientFactory
) -> None:
    chat_server.add(answer("a"), answer("b"))
    async with make_client(tool_choice="required") as client:
        with anyio.fail_after(10):
            await client.chat_with_tools(MESSAGES, openai_tools())
            await client.chat_with_tools(MESSAGES, openai_tools(), tool_choice="none")
    assert [body["tool_choice"] for body in chat_server.bodies] == ["required", "none"]


async def test_a_lone_surrogate_in_a_message_is_sent_as_valid_utf8(
    chat_server: ScriptedChatServer, make_client: ClientFactory
) -> None:
    chat_server.add(answer("ok"))
    async with make_client() as client:
        with anyio.fail_after(10):
            await client.chat_with_tools([{"role": "user", "content": "file \udcff.go"}], [])
    assert chat_server.bodies[0]["messages"][0]["content"] == "file ?.go"


async def test_tool_calls_are_parsed_with_ids_and_json_text_arguments(
    chat_server: ScriptedChatServer, make_client: ClientFactory
) -> None:
    chat_server.add(tool_calls(("call_a", "search_files", {"pattern": "**/*.go"}), ("call_b", "read_file", "{bad")))
    async with make_client() as client:
        with anyio.fail_after(10):
            turn = await client.chat_with_tools(MESSAGES, openai_tools())
    assert turn.tool_calls == [
        {
            "id": "call_a",
            "type": "function",
            "function": {"name": "search_files", "arguments": '{"pattern": "**/*.go"}'},
        },
        {"id": "call_b", "type": "function", "function": {"name": "read_file", "arguments": "{bad"}},
    ]
    assert turn.message == {"role": "assistant", "content": None, "tool_calls": turn.tool_calls}
    assert turn.finish_reason == "tool_calls"


# retries ---------------------------------------------------------------------------------------


async def test_429_with_retry_after_is_retried_after_exactly_that_wait(
    chat_server: ScriptedChatServer, make_client: ClientFactory, sleeps: SleepRecorder
) -> None:
    chat_server.add(error(429, "Rate limit reached", {"Retry-After": "2"}), answer("done"))
    async with make_client() as client:
        with anyio.fail_after(10):
            turn = await client.chat_with_tools(MESSAGES, [])
    assert turn.content == "done"
    assert len(chat_server.requests) == 2
    assert chat_server.bodies[0] == chat_server.bodies[1]
    assert sleeps.delays == [2.0]


async def test_retry_after_ms_wins_over_retry_after(
    chat_server: ScriptedChatServer, make_client: ClientFactory, sleeps: SleepRecorder
) -> None:
    chat_server.add(error(429, headers={"retry-after-ms": "250", "Retry-After": "9"}), answer("done"))
    async with make_client() as client:
        with anyio.fail_after(10):
            await client.chat_with_tools(MESSAGES, [])
    assert sleeps.delays == [0.25]


async def test_500_then_success_is_retried_after_the_initial_backoff(
    chat_server: ScriptedChatServer, make_client: ClientFactory, sleeps: SleepRecorder
) -> None:
    chat_server.add(error(500, "The server had an error"), answer("done"))
    async with make_client(retry_initial_s=0.5) as client:
        with anyio.fail_after(10):
            assert (await client.chat_with_tools(MESSAGES, [])).content == "done"
    assert len(chat_server.requests) == 2
    assert sleeps.delays == [0.5]


@pytest.mark.slow
@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504, 529])
async def test_retryable_statuses_back_off_exponentially_up_to_the_cap(
    chat_server: ScriptedChatServer, make_client: ClientFactory, sleeps: SleepRecorder, status: int
) -> None:
    chat_server.add(*[error(status)] * 5, answer("finally"))
    async with make_client(max_retries=5, retry_initial_s=0.5, retry_max_s=3.0) as client:
        with anyio.fail_after(10):
            assert (await client.chat_with_tools(MESSAGES, [])).content == "finally"
    assert sleeps.delays == [0.5, 1.0, 2.0, 3.0, 3.0]


async def test_exhausted_retries_raise_llm_unavailable_with_status_and_attempts(
    chat_server: ScriptedChatServer, make_client: ClientFactory, sleeps: SleepRecorder
) -> None:
    chat_server.add(*[error(503, "overloaded")] * 3)
    async with make_client(max_retries=2) as client:
        with anyio.fail_after(10), pytest.raises(ChatUnavailableError) as info:
            await client.chat_with_tools(MESSAGES, [])
    assert len(chat_server.requests) == 3 and len(sleeps.delays) == 2
    assert info.value.code == "llm_unavailable" and info.value.retryable is True
    assert info.value.details["status"] == 503 and info.value.details["attempts"] == 3
    assert "HTTP 503: overloaded" in info.value.message


async def test_a_retry_after_beyond_the_cap_ends_the_retries_at_once(
    chat_server: ScriptedChatServer, make_client: ClientFactory, sleeps: SleepRecorder
) -> None:
    chat_server.add(error(429, "quota", {"Retry-After": "3600"}), answer("never"))
    async with make_client(retry_max_s=30) as client:
        with anyio.fail_after(10), pytest.raises(ChatUnavailableError) as info:
            await client.chat_with_tools(MESSAGES, [])
    assert len(chat_server.requests) == 1 and sleeps.delays == []
    assert info.value.details["retry_after_s"] == 3600.0


async def test_zero_retries_means_one_attempt(
    chat_server: ScriptedChatServer, make_client: ClientFactory, sleeps: SleepRecorder
) -> None:
    chat_server.add(error(500), answer("unused"))
    async with make_client(max_retries=0) as client:
        with anyio.fail_after(10), pytest.raises(ChatUnavailableError):
            await client.chat_with_tools(MESSAGES, [])
    assert len(chat_server.requests) == 1 and sleeps.delays == []


async def test_a_dropped_connection_is_retried(
    chat_server: ScriptedChatServer, make_client: ClientFactory, sleeps: SleepRecorder
) -> None:
    chat_server.add(Reply(disconnect=True), answer("after reconnect"))
    async with make_client() as client:
        with anyio.fail_after(10):
            assert (await client.chat_with_tools(MESSAGES, [])).content == "after reconnect"
    assert len(chat_server.requests) == 2 and sleeps.delays == [0.5]


@pytest.mark.slow
async def test_a_slow_answer_times_out_and_is_retried(
    chat_server: ScriptedChatServer, make_client: ClientFactory, sleeps: SleepRecorder
) -> None:
    chat_server.add(Reply(body={}, delay_s=1.0), answer("fast now"))
    async with make_client(timeout_s=0.2) as client:
        with anyio.fail_after(10):
            assert (await client.chat_with_tools(MESSAGES, [])).content == "fast now"
    assert len(sleeps.delays) == 1


async def test_a_refused_connection_is_retried_then_reported(sleeps: SleepRecorder) -> None:
    with socket.socket() as probe:  # a port nobody listens on: bind, read the number, close
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings = ChatSettings(base_url=f"http://127.0.0.1:{port}/v1", model="m", max_retries=2)
    async with ChatClient(settings, sleep=sleeps, jitter=lambda: 0.0) as client:
        with anyio.fail_after(10), pytest.raises(ChatUnavailableError, match="ConnectError") as info:
            await client.chat_with_tools(MESSAGES, [])
    assert sleeps.delays == [0.5, 1.0] and info.value.details["attempts"] == 3


# final errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (400, "Invalid 'tools[0].function.description': string too long."),
        (401, "Incorrect API key provided."),
        (403, "Project does not have access to model."),
        (404, "The model `nope` does not exist."),
        (422, "Unprocessable."),
    ],
)
async def test_other_4xx_are_final_and_name_the_servers_reason_but_never_the_key(
    chat_server: ScriptedChatServer, make_client: ClientFactory, sleeps: SleepRecorder, status: int, message: str
) -> None:
    chat_server.add(error(status, message), answer("unused"))
    async with make_client() as client:
        with anyio.fail_after(10), pytest.raises(ChatRejectedError) as info:
            await client.chat_with_tools(MESSAGES, [])
    assert len(chat_server.requests) == 1 and sleeps.delays == []
    assert info.value.code == "llm_request_rejected" and info.value.details == {"status": status}
    assert info.value.message == f"The chat endpoint answered HTTP {status}: {message}"
    assert API_KEY not in str(info.value.to_payload())


@pytest.mark.slow
@pytest.mark.parametrize(
    ("reply", "match"),
    [
        (Reply(body=b"<html>gateway</html>"), "not JSON"),
        (Reply(body=[1, 2]), "not a JSON object"),
        (Reply(body={"object": "chat.completion", "choices": []}), "no choices"),
        (Reply(body={"error": {"message": "context length exceeded"}}), "no choices: .*context length"),
        (Reply(body={"choices": [{"index": 0}]}), "no message"),
        (Reply(body={"choices": [{"message": {"content": 5}}]}), "neither text"),
        (Reply(body={"choices": [{"message": {"tool_calls": {"id": "x"}}}]}), "not a list"),
        (Reply(body={"choices": [{"message": {"tool_calls": [{"id": "x"}]}}]}), "no 'function'"),
    ],
)
async def test_an_answer_that_is_not_a_chat_completion_is_llm_bad_response(
    chat_server: ScriptedChatServer, make_client: ClientFactory, reply: Reply, match: str
) -> None:
    chat_server.add(reply)
    async with make_client() as client:
        with anyio.fail_after(10), pytest.raises(ChatResponseError, match=match) as info:
            await client.chat_with_tools(MESSAGES, [])
    assert info.value.code == "llm_bad_response"


# lenient parsing of OpenAI-compatible servers --------------------------------------------------


async def test_missing_ids_object_arguments_and_content_parts_are_normalised(
    chat_server: ScriptedChatServer, make_client: ClientFactory
) -> None:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": [{"type": "text", "text": "Looking"}, {"type": "text", "text": " around."}],
        "tool_calls": [
            {"function": {"name": "search_files", "arguments": {"pattern": "*.go"}}},
            {"id": "", "function": {"name": "count_lines"}},
        ],
    }
    chat_server.add(Reply(body={"choices": [{"message": message, "finish_reason": "tool_calls"}]}))
    async with make_client() as client:
        with anyio.fail_after(10):
            turn = await client.chat_with_tools(MESSAGES, [])
    assert turn.content == "Looking around." and turn.usage == {}
    first, second = turn.tool_calls
    assert first["id"].startswith("call_") and second["id"].startswith("call_") and first["id"] != second["id"]
    assert first["function"] == {"name": "search_files", "arguments": '{"pattern": "*.go"}'}
    assert second == {"id": second["id"], "type": "function", "function": {"name": "count_lines", "arguments": ""}}


# settings --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base_url", "endpoint"),
    [
        ("https://api.openai.com/v1", "https://api.openai.com/v1/chat/completions"),
        ("http://127.0.0.1:8000/v1/", "http://127.0.0.1:8000/v1/chat/completions"),
        ("http://127.0.0.1:8000/v1/chat/completions", "http://127.0.0.1:8000/v1/chat/completions"),
    ],
)
def test_the_endpoint_is_the_base_url_plus_chat_completions(base_url: str, endpoint: str) -> None:
    assert ChatSettings(base_url=base_url, model="m").endpoint == endpoint


@pytest.mark.parametrize("base_url", ["ftp://example.com/v1", "file:///etc/passwd", "127.0.0.1:8000", ""])
def test_a_base_url_that_is_not_http_is_refused(base_url: str) -> None:
    with pytest.raises(ValueError, match="http"):
        ChatSettings(base_url=base_url, model="m")


def test_the_api_key_never_appears_in_the_settings_repr() -> None:
    assert API_KEY not in repr(ChatSettings(base_url="http://127.0.0.1:1/v1", model="m", api_key=API_KEY))


def test_the_key_comes_from_repo_sandbox_bridge_api_key_before_openai_api_key(tmp_path: Any) -> None:
    env = {"REPO_SANDBOX_BRIDGE_API_KEY": "sk-repo", "OPENAI_API_KEY": "sk-openai"}
    config = load_settings(None, env=env, cwd=tmp_path).bridge
    assert ChatSettings.from_config(config, env).api_key == "sk-repo"
    assert "sk-repo" not in str(config.model_dump(mode="json"))  # check-config prints this: masked


def test_the_key_falls_back_to_the_env_var_named_by_api_key_env(tmp_path: Any) -> None:
    env = {"OPENAI_API_KEY": "sk-openai", "MY_KEY": "sk-mine"}
    assert ChatSettings.from_config(load_settings(None, env=env, cwd=tmp_path).bridge, env).api_key == "sk-openai"
    env["REPO_SANDBOX_BRIDGE_API_KEY_ENV"] = "MY_KEY"
    assert ChatSettings.from_config(load_settings(None, env=env, cwd=tmp_path).bridge, env).api_key == "sk-mine"
    assert ChatSettings.from_config(load_settings(None, env={}, cwd=tmp_path).bridge, {}).api_key is None


def test_settings_come_from_the_bridge_section(tmp_path: Any) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[bridge]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m1"\nmax_retries = 1\ntimeout_s = 5\n')
    settings = ChatSettings.from_config(load_settings(config, env={}, cwd=tmp_path).bridge, {})
    assert (settings.base_url, settings.model, settings.max_retries, settings.timeout_s) == (
        "http://127.0.0.1:9/v1",
        "m1",
        1,
        5.0,
    )


# Retry-After parsing and backoff arithmetic ----------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, None),
        ({"retry-after": "7"}, 7.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after": "-3"}, 0.0),
        ({"retry-after-ms": "1200"}, 1.2),
        ({"retry-after": "soon"}, None),
    ],
)
def test_retry_after_is_parsed_from_seconds_or_milliseconds(headers: dict[str, str], expected: float | None) -> None:
    assert parse_retry_after(headers) == expected


def test_retry_after_as_an_http_date_is_the_time_until_it() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    later = format_datetime(now + timedelta(seconds=42), usegmt=True)
    assert parse_retry_after({"retry-after": later}, now=now.timestamp()) == 42.0
    earlier = format_datetime(now - timedelta(seconds=42), usegmt=True)
    assert parse_retry_after({"retry-after": earlier}, now=now.timestamp()) == 0.0


@pytest.mark.parametrize(
    ("attempt", "jitter", "expected"),
    [
        (0, 0.0, 0.5),
        (1, 0.0, 1.0),
        (2, 0.0, 2.0),
        (3, 0.0, 4.0),
        (10, 0.0, 30.0),
        (0, 0.999, 0.5 * 0.75025),
        (3, 0.5, 3.5),
    ],
)
def test_backoff_doubles_up_to_the_cap_minus_up_to_a_quarter_of_jitter(
    attempt: int, jitter: float, expected: float
) -> None:
    assert backoff_delay(attempt, 0.5, 30.0, jitter) == pytest.approx(expected)
