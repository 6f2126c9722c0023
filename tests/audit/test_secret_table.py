"""The secret table: every secret below is masked in the audit log and in every tool output; the look-alikes
at the end are left alone. Checked on the processors, through the pipeline with a real audit file, and
through the real MCP SDK client."""

from __future__ import annotations

import json
import random
import string
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from repo_sandbox.audit.events import build_processors, render_json
from repo_sandbox.audit.masking import mask_text
from repo_sandbox.calls import CallContext
from repo_sandbox.config.model import Settings
from repo_sandbox.runtime.assembly import build_pipeline
from repo_sandbox.tools.registry import TOOLS
from repo_sandbox.wiring.assembly import build_server
from repo_sandbox.workspace import Workspace
from tree_files import write

SettingsFactory = Callable[..., Settings]

_rng = random.Random(20261124)
ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
HEX = "0123456789abcdef"


def rand(n: int, alphabet: str = ALNUM) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


@dataclass(frozen=True)
class Secret:
    id: str
    secret: str
    """The text that must never appear."""
    line: str
    """How it appears in a file, a command or a log field (may span lines)."""


def pem(kind: str, first: str, width: int = 64, lines: int = 6) -> tuple[str, str, str]:
    body = (
        [first + rand(width - len(first), B64)] + [rand(width, B64) for _ in range(lines - 2)] + [rand(20, B64) + "=="]
    )
    block = f"-----BEGIN {kind}-----\n" + "\n".join(body) + f"\n-----END {kind}-----"
    return body[0], body[2], block


RSA_FIRST, RSA_MIDDLE, RSA_BLOCK = pem("RSA PRIVATE KEY", "MIIEowIBAAKCAQEA")
SSH_FIRST, SSH_MIDDLE, SSH_BLOCK = pem("OPENSSH PRIVATE KEY", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ", 70)
EC_FIRST, _, EC_BLOCK = pem("EC PRIVATE KEY", "MHcCAQEEI", lines=3)
GCP_KEY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ" + rand(40, B64)
PGP_FIRST, _, PGP_BLOCK = pem("PGP PRIVATE KEY BLOCK", "lQOYBF", lines=4)

OPENAI = "sk-" + rand(48)
OPENAI_PROJ = "sk-proj-" + rand(74, ALNUM + "_-") + "A1"
OPENAI_SVC = "sk-svcacct-" + rand(40) + "9"
ANTHROPIC = "sk-ant-api03-" + rand(93, ALNUM + "_-") + "-" + rand(6) + "AA"
GHP, GHO, GHS = ("ghp_" + rand(36)), ("gho_" + rand(36)), ("ghs_" + rand(36))
GITHUB_PAT = "github_pat_11A" + rand(19) + "_" + rand(59)
GLPAT = "glpat-" + rand(20, ALNUM + "-_")
AKIA = "AKIA" + rand(16, string.ascii_uppercase + "234567")
ASIA = "ASIA" + rand(16, string.ascii_uppercase + "234567")
AWS_SECRET_1, AWS_SECRET_2, AWS_SECRET_3 = rand(40, B64), rand(40, B64), rand(40, B64)
XOXB = f"xoxb-{rand(12, '0123456789')}-{rand(13, '0123456789')}-{rand(24)}"
XOXP = f"xoxp-{rand(12, '0123456789')}-{rand(12, '0123456789')}-{rand(13, '0123456789')}-{rand(32, HEX)}"
XAPP = f"xapp-1-A{rand(10, string.ascii_uppercase + '0123456789')}-{rand(13, '0123456789')}-{rand(64, HEX)}"
SLACK_HOOK = f"T{rand(8, string.ascii_uppercase)}/B{rand(10, string.ascii_uppercase)}/{rand(24)}"
JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwi" + rand(20) + "." + rand(43, ALNUM + "_-")
JWT_2 = "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJodHRwczovL2FjY291bnRzLmdvb2dsZS5jb20i" + rand(30) + "." + rand(86)
OPAQUE_BEARER = rand(40, ALNUM + "._-")
BASIC = "dXNlcjpwYXNzd29yZC0" + rand(12) + "=="
GOOGLE = "AIza" + rand(35, ALNUM + "_-")
STRIPE_SK, STRIPE_RK = "sk_live_" + rand(24), "rk_live_" + rand(24)
STRIPE_WH = "whsec_" + rand(32)
NPM = "npm_" + rand(36)
PYPI = "pypi-AgEIcHlwaS5vcmc" + rand(60, ALNUM + "_-")
HF = "hf_" + rand(34, string.ascii_letters)
SENDGRID = f"SG.{rand(22, ALNUM + '_-')}.{rand(43, ALNUM + '_-')}"
AZURE = rand(86, B64) + "=="
API_KEY_HEX = "4" + rand(31, HEX)
CLIENT_SECRET = "GOCSPX-" + rand(28, ALNUM + "_-")
DB_PASSWORD = "Tr0ub4dor-x" + rand(6) + "!"
YAML_PASSWORD = "correct-horse-" + rand(8) + "-staple"
PWD_VALUE = "s3cr3t-pwd-" + rand(8)
PASSWD_VALUE = "passwd-" + rand(10)
PG_PASSWORD = "pg-" + rand(14)
FLAG_PASSWORD = "flag-" + rand(14)
CURL_PASSWORD = "curl-" + rand(14)
MYSQL_PASSWORD = "My" + rand(12) + "9!"
URL_PASSWORD = "Sup3rS3cret" + rand(8)
URL_PASSWORD_2 = "tok3n-" + rand(12)
REDIS_PASSWORD = "redis-" + rand(12)
SESSION_COOKIE = rand(32)
SET_COOKIE = rand(40)
XML_PASSWORD = "xml-s3cret-" + rand(8)
QUERY_TOKEN = rand(30)
DJANGO_SECRET = "django-insecure-" + rand(40, ALNUM + "!@#%^*-_=+")

SECRETS: list[Secret] = [
    # OpenAI / Anthropic
    Secret("openai_env", OPENAI, f"OPENAI_API_KEY={OPENAI}"),
    Secret("openai_project_in_code", OPENAI_PROJ, f'client = OpenAI(api_key="{OPENAI_PROJ}")'),
    Secret("openai_svcacct_yaml", OPENAI_SVC, f"openai: {OPENAI_SVC}"),
    Secret("anthropic_yaml", ANTHROPIC, f"ANTHROPIC_API_KEY: {ANTHROPIC}"),
    # GitHub / GitLab
    Secret("ghp_as_url_user", GHP, f"git clone https://{GHP}@github.com/acme/app.git"),
    Secret("gho_in_json", GHO, f'{{"oauth": "{GHO}"}}'),
    Secret("ghs_in_header", GHS, f"X-GitHub-Token: {GHS}"),
    Secret("github_pat_export", GITHUB_PAT, f"export GH_TOKEN={GITHUB_PAT}"),
    Secret("gitlab_pat", GLPAT, f"gitlab_token = '{GLPAT}'"),
    # AWS
    Secret("aws_akia_ini", AKIA, f"aws_access_key_id = {AKIA}"),
    Secret("aws_asia_json", ASIA, f'"AccessKeyId": "{ASIA}",'),
    Secret("aws_secret_ini", AWS_SECRET_1, f"aws_secret_access_key = {AWS_SECRET_1}"),
    Secret("aws_secret_json", AWS_SECRET_2, f'"SecretAccessKey": "{AWS_SECRET_2}",'),
    Secret("aws_secret_env", AWS_SECRET_3, f"AWS_SECRET_ACCESS_KEY={AWS_SECRET_3} aws s3 ls"),
    # Slack
    Secret("slack_bot", XOXB, f"SLACK_BOT={XOXB}"),
    Secret("slack_user_in_code", XOXP, f'slack = WebClient("{XOXP}")'),
    Secret("slack_app", XAPP, f"app_level = {XAPP}"),
    Secret("slack_webhook", SLACK_HOOK, f"curl -X POST https://hooks.slack.com/services/{SLACK_HOOK} -d @msg.json"),
    # JWT, bearer, basic
    Secret("jwt_in_code", JWT, f'id_token = "{JWT}"'),
    Secret("jwt_in_url", JWT_2, f"https://app.example.com/callback#access={JWT_2}&state=1"),
    Secret("bearer_in_curl", OPAQUE_BEARER, f'curl -H "Authorization: Bearer {OPAQUE_BEARER}" https://api.example.com'),
    Secret("basic_auth_header", BASIC, f"Authorization: Basic {BASIC}"),
    # Other vendors
    Secret("google_api_key_js", GOOGLE, f'const mapsKey = "{GOOGLE}";'),
    Secret("stripe_secret", STRIPE_SK, f'stripe.api_key = "{STRIPE_SK}"'),
    Secret("stripe_restricted", STRIPE_RK, f"STRIPE={STRIPE_RK}"),
    Secret("stripe_webhook", STRIPE_WH, f"endpoint_secret = {STRIPE_WH}"),
    Secret("npm_token_npmrc", NPM, f"//registry.npmjs.org/:_authToken={NPM}"),
    Secret("pypi_token", PYPI, f"password = {PYPI}"),
    Secret("huggingface", HF, f"HF_TOKEN={HF}"),
    Secret("sendgrid", SENDGRID, f"sg = SendGridAPIClient('{SENDGRID}')"),
    Secret("azure_connection_string", AZURE, f"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={AZURE};"),
    Secret("x_api_key_header", API_KEY_HEX, f"X-Api-Key: {API_KEY_HEX}"),
    Secret("oauth_client_secret_json", CLIENT_SECRET, f'"client_secret": "{CLIENT_SECRET}",'),
    Secret("django_secret_key", DJANGO_SECRET, f"SECRET_KEY = '{DJANGO_SECRET}'"),
    # Passwords by context
    Secret("password_env", DB_PASSWORD, f"DB_PASSWORD={DB_PASSWORD}"),
    Secret("password_yaml_quoted", YAML_PASSWORD, f'  password: "{YAML_PASSWORD}"'),
    Secret("pwd_colon", PWD_VALUE, f"pwd: {PWD_VALUE}"),
    Secret("passwd_ini", PASSWD_VALUE, f"passwd={PASSWD_VALUE}"),
    Secret("pgpassword_in_command", PG_PASSWORD, f"PGPASSWORD={PG_PASSWORD} psql -h db -U app"),
    Secret("password_flag_in_command", FLAG_PASSWORD, f"mytool login --password {FLAG_PASSWORD} --user bob"),
    Secret("curl_user_password", CURL_PASSWORD, f"curl -fsS -u deploy:{CURL_PASSWORD} https://artifacts.acme.dev/x"),
    Secret("mysql_p_flag", MYSQL_PASSWORD, f"mysql -u root -p{MYSQL_PASSWORD} app < dump.sql"),
    Secret("password_xml", XML_PASSWORD, f"<password>{XML_PASSWORD}</password>"),
    Secret("token_in_query", QUERY_TOKEN, f"GET https://api.example.com/v1/items?access_token={QUERY_TOKEN}&page=2"),
    # URLs with credentials
    Secret("postgres_url", URL_PASSWORD, f"DATABASE_URL=postgres://admin:{URL_PASSWORD}@db.internal:5432/app"),
    Secret(
        "https_url_creds",
        URL_PASSWORD_2,
        f"pip install --index-url https://deploy:{URL_PASSWORD_2}@pypi.acme.dev/simple x",
    ),
    Secret("redis_url_no_user", REDIS_PASSWORD, f"REDIS=redis://:{REDIS_PASSWORD}@cache:6379/0"),
    # Cookies
    Secret("cookie_header", SESSION_COOKIE, f"Cookie: sessionid={SESSION_COOKIE}; theme=dark"),
    Secret("set_cookie_header", SET_COOKIE, f"Set-Cookie: session={SET_COOKIE}; Path=/; HttpOnly"),
    # Private keys
    Secret("rsa_private_key_first_line", RSA_FIRST, RSA_BLOCK),
    Secret("rsa_private_key_middle_line", RSA_MIDDLE, RSA_BLOCK),
    Secret("openssh_private_key", SSH_MIDDLE, SSH_BLOCK),
    Secret("ec_private_key_in_python", EC_FIRST, "KEY = '''" + EC_BLOCK + "'''"),
    Secret("pgp_private_key_block", PGP_FIRST, PGP_BLOCK),
    Secret(
        "private_key_escaped_in_json",
        GCP_KEY,
        '{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\n'
        + GCP_KEY
        + '\\n-----END PRIVATE KEY-----\\n", "client_email": "bot@acme.iam.gserviceaccount.com"}',
    ),
]

LOOK_ALIKES: list[tuple[str, str]] = [
    # Hashes and ids
    ("git_sha", "commit 3f786850e387550fdab836ed7e6dc881de23001b"),
    ("sha256", "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    (
        "sha512_prefix",
        "integrity sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==",
    ),
    ("uuid_in_code", 'id = uuid.UUID("123e4567-e89b-12d3-a456-426614174000")'),
    ("uuid_plain", "request 550e8400-e29b-41d4-a716-446655440000 done"),
    # Names that contain sensitive words
    ("token_count", "token_count = 5"),
    ("max_tokens", "max_tokens: 4096"),
    ("password_field", "password_field = forms.CharField(widget=forms.PasswordInput)"),
    ("password_from_env", 'password = os.environ["DB_PASSWORD"]'),
    ("token_from_header", 'token = request.headers.get("X-Token")'),
    ("password_annotation", "def check_password(password: str) -> bool:"),
    ("api_key_field", "api_key: Optional[str] = None"),
    ("self_assignment", "self.api_key = api_key"),
    ("kwarg_passthrough", "conn = connect(user=user, password=password, host=host)"),
    ("placeholder_env", 'api_key="${OPENAI_API_KEY}"'),
    ("fstring_bearer", 'headers = {"Authorization": f"Bearer {token}"}'),
    ("print_token", 'print(f"token: {token}")'),
    ("json_schema_password", '"password": {"type": "string", "minLength": 8}'),
    ("session_call", "session_id = uuid4().hex"),
    ("secret_from_settings", "SECRET_KEY = settings.SECRET_KEY"),
    ("pwd_env_path", "PWD=/srv/app"),
    # Things that start like tokens
    ("sk_learn", "pip install sk-learn scikit-learn  # sk-learn is not a key"),
    ("task_id", "task-1234567890abcdefghijkl started"),
    ("short_ghp", "ghp_short is a prefix"),
    ("hf_function", 'hf_hub_download(repo_id="bert-base-uncased", filename="config.json")'),
    ("mysql_prompt", "mysql -u root -p app"),
    ("docker_uid_gid", "docker run -u 1000:1000 --rm alpine id"),
    ("bearer_prose", "Bearer tokens are described in RFC 6750."),
    # URLs without credentials, keys that are public
    ("url_without_creds", "https://github.com/acme/app.git and ssh://git@github.com/acme/app.git"),
    ("url_with_port", "http://localhost:8080/path?page=2"),
    (
        "public_key",
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo\n-----END PUBLIC KEY-----",
    ),
    (
        "marker_in_code",
        'if line.startswith("-----BEGIN RSA PRIVATE KEY-----"):\n    return parse_configuration_file(line)',
    ),
    # Base64 that is not a key
    (
        "base64_image",
        '<img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==">',
    ),
    ("time_and_port", "started at 12:30:45 on 127.0.0.1:8000"),
    ("aws_role_id_not_a_credential", "RoleId: AROAJ2UCCR6DPCEXAMPLE"),
]


def test_the_table_has_at_least_40_secrets_and_unique_ids() -> None:
    assert len(SECRETS) >= 40
    assert len({s.id for s in SECRETS}) == len(SECRETS)
    assert len({name for name, _ in LOOK_ALIKES}) == len(LOOK_ALIKES)


def _events_carrying(item: Secret) -> list[dict[str, Any]]:
    """The secret as an audit event may carry it: in arguments, nested, in a command, under a sensitive key."""
    return [
        {"event": "tool_call", "tool": "read_file", "arguments": {"path": item.line}},
        {"event": "tool_call", "tool": "execute_bash", "arguments": {"command": f"cd src && {item.line} | head"}},
        {"event": "tool_call", "tool": "x", "arguments": {"config": {"items": [1, {"note": item.line}, [item.line]]}}},
        {"event": "policy_decision", "kind": "command_denied", "details": {"argv": ["sh", "-c", item.line]}},
        {
            "event": "tool_call",
            "tool": "x",
            "arguments": {"headers": {"Authorization": item.secret, "apiKey": item.secret}},
        },
        {
            "event": "tool_call",
            "tool": "x",
            "arguments": {"env": {"PASSWORD": item.secret, "nested": {"token": [item.secret]}}},
        },
        {"event": "tool_call", "tool": "x", "arguments": {item.line: "as a key"}},
    ]


def serialise(event: dict[str, Any]) -> str:
    for processor in build_processors(redact=True, max_value_chars=100_000):
        event = processor(event)
    return render_json(event)


# The audit processors --------------------------------------------------------------------------------


@pytest.mark.parametrize("item", SECRETS, ids=lambda s: s.id)
def test_secret_never_appears_in_a_serialised_audit_event(item: Secret) -> None:
    for event in _events_carrying(item):
        line = serialise(event)
        assert item.secret not in line, line
        assert json.loads(line)  # still one valid JSON object


@pytest.mark.parametrize("item", SECRETS, ids=lambda s: s.id)
def test_secret_in_text_is_masked_within_its_lines(item: Secret) -> None:
    counts = Counter[str]()
    text = f"before\n{item.line}\nafter"
    masked = mask_text(text, counts)
    assert item.secret not in masked
    assert masked.count("\n") == text.count("\n")
    assert len(masked) <= len(text)
    assert sum(counts.values()) >= 1
    assert mask_text(masked) == masked, "masking is idempotent"


@pytest.mark.parametrize(("name", "text"), LOOK_ALIKES, ids=[name for name, _ in LOOK_ALIKES])
def test_look_alike_is_left_alone(name: str, text: str) -> None:
    counts = Counter[str]()
    assert mask_text(text, counts) == text
    assert not counts
    event = {"event": "tool_call", "tool": "read_file", "arguments": {"pattern": text, "token_count": 5}}
    assert json.loads(serialise(event))["arguments"] == {"pattern": text, "token_count": 5}


# End to end: files, calls, the audit file -------------------------------------------------------------


@pytest.fixture
def leaky_repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write(root / "src" / "leaky.txt", "header\n" + "\n".join(s.line for s in SECRETS) + "\nfooter\n")
    write(root / "src" / "clean.py", "\n".join(text for _, text in LOOK_ALIKES) + "\n")
    return root


@pytest.fixture
def audited(leaky_repo: Path, make_settings: SettingsFactory, tmp_path: Path) -> Iterator[tuple[Workspace, Path]]:
    audit_file = tmp_path / "audit" / "audit.jsonl"
    audit_file.parent.mkdir()
    ws = Workspace(make_settings(leaky_repo, audit={"path": str(audit_file)}))
    yield ws, audit_file
    ws.close()


def _calls_carrying_secrets() -> list[tuple[str, dict[str, Any]]]:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("read_file", {"path": "src/leaky.txt"}),
        ("read_file", {"path": "src/leaky.txt", "line_numbers": False}),
        ("search_text", {"pattern": "=", "path": "src", "context": 2}),
        ("search_text", {"pattern": "[A-Za-z0-9+/]{60,}", "path": "src", "context": 1}),
        ("search_text", {"pattern": "PRIVATE KEY", "multiline": True, "context": 3}),
    ]
    for item in SECRETS:
        calls.append(("search_text", {"pattern": item.secret, "fixed_strings": True, "context": 1}))
        calls.append(("execute_bash", {"command": f"echo {json.dumps(item.line)} | grep x"}))
        calls.append(("count_lines", {"path": "src", "options": {"auth": {"token": item.secret}, "note": item.line}}))
    return calls


def _assert_clean(text: str, where: str) -> None:
    for item in SECRETS:
        assert item.secret not in text, f"{item.id} leaked in {where}"


@pytest.mark.slow
@pytest.mark.anyio
async def test_no_secret_reaches_the_model_or_the_audit_file_through_the_mcp_client(
    audited: tuple[Workspace, Path],
) -> None:
    ws, audit_file = audited
    calls = _calls_carrying_secrets()
    async with Client(build_server(ws), mode="legacy") as client:
        with anyio.fail_after(60):
            for tool, arguments in calls:
                result = await client.call_tool(tool, arguments)
                wire = json.dumps(result.model_dump(mode="json", by_alias=True))
                if tool != "execute_bash":  # until it exists it is an unknown tool, answered without the arguments
                    _assert_clean(wire, f"{tool} result")
                else:
                    assert result.is_error is True or "redactions" in wire
            first = await client.call_tool("read_file", {"path": "src/leaky.txt"})
            assert first.structured_content is not None
            assert first.structured_content["redactions"] >= len(SECRETS) - 2  # two rows share the RSA block
            clean = await client.call_tool("read_file", {"path": "src/clean.py", "line_numbers": False})
            assert clean.structured_content is not None
            assert clean.structured_content["redactions"] == 0
            assert clean.structured_content["content"] == "\n".join(text for _, text in LOOK_ALIKES) + "\n"
    assert ws.audit.flush(10)
    log = audit_file.read_text(encoding="utf-8")
    _assert_clean(log, "the audit file")
    events = [json.loads(line) for line in log.splitlines()]
    assert sum(e["event"] == "tool_call" for e in events) == len(calls) + 2
    assert any(e["event"] == "policy_decision" and e["kind"] == "output_masked" for e in events)
    assert ws.audit.health()["failed"] == 0


@pytest.mark.slow
@pytest.mark.anyio
async def test_no_secret_reaches_the_outcome_or_the_audit_file_through_the_pipeline(
    audited: tuple[Workspace, Path],
) -> None:
    ws, audit_file = audited
    pipeline = build_pipeline(ws, TOOLS)
    calls = _calls_carrying_secrets()
    with anyio.fail_after(60):
        for number, (tool, arguments) in enumerate(calls):
            context = CallContext(session_id=f"s{number % 3}", request_id=str(number))
            outcome = await pipeline.call(tool, arguments, context)
            if tool != "execute_bash":
                _assert_clean(outcome.to_json(), f"{tool} outcome")
    for item in SECRETS:  # what later stages will do: record a decision that quotes the caller's command
        ws.audit.decision("command_denied", rule="exec.allow", command=item.line, argv=item.line.split())
    assert ws.audit.flush(10)
    log = audit_file.read_text(encoding="utf-8")
    _assert_clean(log, "the audit file")
    assert len(log.splitlines()) >= len(calls) + len(SECRETS)


@pytest.fixture
async def plain_client(leaky_repo: Path, make_settings: SettingsFactory) -> AsyncIterator[Client]:
    ws = Workspace(make_settings(leaky_repo, audit={"redact_output": False}))
    try:
        async with Client(build_server(ws), mode="auto") as client:
            yield client
    finally:
        ws.close()


@pytest.mark.anyio
async def test_with_output_masking_off_the_file_is_shown_as_it_is(plain_client: Client) -> None:
    result = await plain_client.call_tool("read_file", {"path": "src/leaky.txt", "line_numbers": False})
    assert result.structured_content is not None
    assert result.structured_content["redactions"] is None
    assert all(item.secret in result.structured_content["content"] for item in SECRETS)
