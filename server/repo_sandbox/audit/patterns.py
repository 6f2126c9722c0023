"""Recognisers for secrets inside text, and the one function that masks them: `mask_text`.

Used twice: by the audit processors (every string of an event) and by output masking (the text fields of
tool results). Guarantees, relied upon by output masking and checked by the tests:
- a mask never spans lines: the number of '\\n' in the text is unchanged (line numbers stay true);
- a mask is never longer than what it replaces (a capped result stays within its cap);
- masking is idempotent: masked text has nothing left to mask.

Context rules (`password=...`, `token: ...`) look for the value of a sensitive name; to keep source code
readable they leave values that are code, not literals (`os.environ["X"]`, `args.token`, `None`, `str`,
`f(password=pw)`), placeholders (`${X}`, `{{x}}`, `<x>`) and paths.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

_B: Final = r"(?<![A-Za-z0-9_])"
"""Left boundary: the token does not continue a longer word."""

_SENSITIVE_NAME: Final = (
    r"(?:password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
    r"|secret[_-]?key|signing[_-]?key|encryption[_-]?key|master[_-]?key|client[_-]?secret|auth[_-]?key|credentials?"
    r"|session[_-]?id|sessionid)"
)
"""How the name of a sensitive value ends (`db_password`, `GITHUB_TOKEN`, `x-api-key`, `SessionId`)."""

_CODE_WORDS: Final = frozenset(
    [
        "none",
        "null",
        "nil",
        "undefined",
        "true",
        "false",
        "str",
        "string",
        "int",
        "bool",
        "boolean",
        "bytes",
        "number",
        "any",
        "object",
        "optional",
        "dict",
        "list",
        "secretstr",
        "self",
        "this",
        "required",
        "void",
    ]
)
"""Unquoted values that are code (types, keywords), not secrets: `password: str`, `token = None`."""

_DOTTED: Final = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+")
_IDENTIFIER: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PLACEHOLDER_STARTS: Final = ("$", "%(", "{", "<", "/", "~/", "./", "../", "@")


def mask_for(kind: str, secret: str) -> str:
    """`[REDACTED:kind]`, or a shorter mask when that would be longer than the secret."""
    for mask in (f"[REDACTED:{kind}]", "[REDACTED]", "***"):
        if len(mask) <= len(secret):
            return mask
    return "*" * len(secret)


def is_mask(value: str) -> bool:
    return value.startswith("[REDACTED") or (bool(value) and value.strip("*") == "")


@dataclass(frozen=True, slots=True)
class SecretRule:
    """One kind of secret: a pattern, the group that holds the secret, and cheap literals that gate it."""

    kind: str
    pattern: re.Pattern[str]
    groups: tuple[int | str, ...] = (0,)
    """The group holding the secret: the first of these that took part in the match."""
    hints: tuple[str, ...] = ()
    """The rule runs only when one of these appears in the text (lower-cased when `fold`)."""
    fold: bool = False
    keep: Callable[[re.Match[str]], bool] | None = None
    """True when a candidate is not a secret after all (code, placeholder)."""

    def secret_span(self, match: re.Match[str]) -> tuple[int, int]:
        for group in self.groups:
            if match.group(group) is not None:
                return match.span(group)
        return match.span()


def rule(
    kind: str,
    pattern: str,
    *hints: str,
    groups: tuple[int | str, ...] = (0,),
    fold: bool = False,
    keep: Callable[[re.Match[str]], bool] | None = None,
) -> SecretRule:
    return SecretRule(kind, re.compile(pattern, re.IGNORECASE if fold else 0), groups, hints, fold, keep)


def _assigned_value_is_code(match: re.Match[str]) -> bool:
    """The value of `name = value` is a code reference, a placeholder or a path, not a literal secret."""
    quoted = match.group("q") if match.group("q") is not None else match.group("q2")
    if quoted is not None:
        return len(quoted) < 4 or quoted.startswith(("$", "{", "%(", "<")) or is_mask(quoted)
    value = match.group("u")
    last_word = match.group("name").lower().replace("-", "_").rsplit("_", 1)[-1]
    after = match.string[match.end() : match.end() + 3].lstrip(" \t")[:1]
    return (
        len(value) < 4
        or value.lower() in _CODE_WORDS
        or value.startswith(_PLACEHOLDER_STARTS)
        or after in ("(", "[", ",", ")", "=", ".")  # a call, an index, a keyword argument, an annotation
        or _DOTTED.fullmatch(value) is not None
        or (_IDENTIFIER.fullmatch(value) is not None and last_word in value.lower())  # password=db_password
        or is_mask(value)
    )


def _header_value_is_code(match: re.Match[str]) -> bool:
    value = match.group("u")
    after = match.string[match.end() : match.end() + 1]
    return after in ("(", "[") or _DOTTED.fullmatch(value) is not None or is_mask(value)


def _flag_value_is_placeholder(match: re.Match[str]) -> bool:
    value = match.group("v")
    return value.startswith(("$", "{", "<")) or is_mask(value)


RULES: Final[tuple[SecretRule, ...]] = (
    # Vendor tokens with a recognisable shape ----------------------------------------------------------
    rule("anthropic_key", _B + r"sk-ant-[A-Za-z0-9_-]{20,}", "sk-ant-"),
    rule("openai_key", r"(?<![A-Za-z0-9_-])sk-(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{20,}", "sk-"),
    rule(
        "stripe_key",
        _B + r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}|" + _B + r"whsec_[A-Za-z0-9]{24,}",
        *("_live_", "_test_", "whsec_"),
    ),
    rule(
        "github_token",
        _B + r"(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
        *("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    rule("gitlab_token", _B + r"glpat-[A-Za-z0-9_-]{20,}", "glpat-"),
    rule(
        "slack_webhook",
        r"hooks\.slack\.com/(?:services|workflows)/([A-Za-z0-9_/-]{20,})",
        "hooks.slack.com",
        groups=(1,),
    ),
    rule("slack_token", _B + r"(?:xox[abprse]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,})", "xox", "xapp-"),
    rule(
        "aws_access_key_id",
        r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA)[A-Z0-9]{16}(?![A-Za-z0-9])",
        *("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AIPA", "ANPA", "ANVA", "AROA", "APKA"),
    ),
    rule(
        "aws_secret_key",
        r"(?:aws_?secret_?(?:access_?)?key|secret_?access_?key)[\"']?[ \t]*[:=][ \t]*[\"']?"
        r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
        "secret",
        groups=(1,),
        fold=True,
    ),
    rule("google_api_key", _B + r"AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])", "AIza"),
    rule("npm_token", _B + r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])", "npm_"),
    rule("pypi_token", _B + r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{20,}", "pypi-"),
    rule("huggingface_token", _B + r"hf_[A-Za-z]{34,}(?![A-Za-z0-9])", "hf_"),
    rule("sendgrid_key", _B + r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}", "SG."),
    rule("azure_account_key", r"AccountKey=([A-Za-z0-9+/=]{20,})", "accountkey=", groups=(1,), fold=True),
    rule("jwt", _B + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*", "eyJ"),
    # Credentials found by their context ---------------------------------------------------------------
    rule(
        "url_credentials",
        r"\b[a-z][a-z0-9+.-]{1,20}://([^\s/?#@:\"'<>]*:[^\s/?#@\"'<>]+)@",
        "://",
        groups=(1,),
        fold=True,
    ),
    rule(
        "authorization",
        r"\b(?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?"
        r"(?:(?:basic|bearer|token|digest|negotiate)[ \t]+)?(?P<u>[^\s\"',;()]{8,})",
        "authorization",
        groups=("u",),
        fold=True,
        keep=_header_value_is_code,
    ),
    rule("bearer", r"\bbearer[ \t]+([A-Za-z0-9._~+/-]{16,}=*)", "bearer", groups=(1,), fold=True),
    rule("cookie", r"\b(?:set-)?cookie[ \t]*:[ \t]*([^\r\n]*=[^\r\n]*)", "cookie", groups=(1,), fold=True),
    rule(
        "password",
        r"(?<![A-Za-z0-9-])--(?:password|passwd|token|api-key|apikey|secret|client-secret|access-token|auth-token)"
        r"[ \t]+[\"']?(?P<v>[^\s\"']{4,})",
        "--",
        groups=("v",),
        fold=True,
        keep=_flag_value_is_placeholder,
    ),
    rule(
        "password",
        r"(?<![\w-])(?:-u|--user|--proxy-user)(?:[ \t]+|=)[\"']?[^\s:\"']*:(?!\d+(?:[\s\"']|$))(?P<v>[^\s\"']{3,})",
        *("-u", "--user", "--proxy-user"),
        groups=("v",),
        keep=_flag_value_is_placeholder,
    ),
    rule(
        "password",
        r"\b(?:mysql|mysqldump|mariadb)\b[^\n]*?[ \t]-p(?P<v>[^\s\"'-][^\s\"']{2,})",
        *("mysql", "mariadb"),
        groups=("v",),
        keep=_flag_value_is_placeholder,
    ),
    rule("password", r"<(password|passwd|secret|token|api[_-]?key)>([^<\n]{4,})</\1>", "<", groups=(2,), fold=True),
    rule(
        "password",
        r"(?P<name>" + _SENSITIVE_NAME + r")[\"']?[ \t]*(?:=|:(?!:))(?!=)[ \t]*"
        r"""(?:"(?P<q>[^"\n]*)"|'(?P<q2>[^'\n]*)'|(?P<u>[^\s"'`,;&()<>\[\]{}]+))""",
        *("pass", "pwd", "secret", "token", "key", "credential", "session"),
        groups=("q", "q2", "u"),
        fold=True,
        keep=_assigned_value_is_code,
    ),
)
"""Checked in order: specific shapes first, so their names label the mask and later rules skip masked text."""


PEM_BEGIN: Final = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
PEM_END: Final = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
PEM_MARKER_BYTES: Final = re.compile(rb"-----(BEGIN|END) [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")

_CUT_MARKER: Final = re.compile(r"\.\.\. \[(?:line cut|cut to fit)[^\]]*\]$")
"""The marker read_file/search_text put at the end of an over-long line."""
_ESCAPED_NEWLINE: Final = re.compile(r"\\[nr]")
_EMBEDDING_CHARS: Final = " \t\"'`+,;()"
"""What surrounds key material in source and config files: quotes, concatenation, escaped newlines."""
_KEY_MATERIAL: Final = re.compile(r"[A-Za-z0-9+/]+={0,2}|(?:Proc-Type|DEK-Info|Comment|Version|Hash|Charset):.*")
"""A line of a private key's body: base64, or a header such as `DEK-Info: ...`."""


def mask_key_line(line: str, *, min_chars: int, found: set[str] | None = None) -> str:
    """Mask a line of a private key's body, keeping indentation and any line-cut marker; other lines stay."""
    cut = _CUT_MARKER.search(line)
    body_end = cut.start() if cut else len(line)
    body = line[:body_end].lstrip(" \t")
    material = _ESCAPED_NEWLINE.sub("", body).strip(_EMBEDDING_CHARS)
    if len(material) < min_chars or not _KEY_MATERIAL.fullmatch(material) or "[REDACTED" in body:
        return line
    if found is not None:
        found.add(material)
    return line[: body_end - len(body)] + mask_for("private_key", body) + line[body_end:]


def mask_key_lines(lines: list[str], *, terminated: bool, found: set[str] | None = None) -> list[str]:
    """Mask the key material among lines known to lie inside a private key block. In a block without an END
    marker only long base64 lines (and the short lines right after them) count, so code that merely
    mentions a BEGIN marker stays readable."""
    masked: list[str] = []
    previous = False
    for line in lines:
        new = mask_key_line(line, min_chars=1 if terminated or previous else 16, found=found)
        previous = new != line
        masked.append(new)
    return masked


def _mask_private_keys(text: str, counts: Counter[str], found: set[str] | None) -> str:
    """Mask the key material between BEGIN and END of each private key block (to the end of the text when the
    END is not in it)."""
    if "PRIVATE KEY" not in text:
        return text
    parts: list[str] = []
    position = 0
    while (begin := PEM_BEGIN.search(text, position)) is not None:
        end = PEM_END.search(text, begin.end())
        after = PEM_BEGIN.search(text, begin.end())
        if after is not None and (end is None or after.start() < end.start()):
            end = None  # a block without its END, followed by another block
        stop = end.start() if end is not None else after.start() if after is not None else len(text)
        body = text[begin.end() : stop]
        masked = "\n".join(mask_key_lines(body.split("\n"), terminated=end is not None, found=found))
        if masked != body:
            counts["private_key"] += 1
        parts += [text[position : begin.end()], masked]
        position = stop
    parts.append(text[position:])
    return "".join(parts)


def _parts_worth_remembering(kind: str, secret: str) -> list[str]:
    """The secret, and the parts of it that could show up on their own (a URL's password, cookie values)."""
    if kind == "url_credentials":
        return [secret, secret.partition(":")[2]]
    if kind == "cookie":
        return [secret, *(pair.partition("=")[2].strip() for pair in secret.split(";"))]
    return [secret]


def _apply_rule(secret_rule: SecretRule, text: str, counts: Counter[str], found: set[str] | None) -> str:
    def replace(match: re.Match[str]) -> str:
        if secret_rule.keep is not None and secret_rule.keep(match):
            return match.group(0)
        start, end = secret_rule.secret_span(match)
        secret = match.string[start:end]
        if is_mask(secret):
            return match.group(0)
        counts[secret_rule.kind] += 1
        if found is not None:
            found.update(_parts_worth_remembering(secret_rule.kind, secret))
        offset = match.start()
        whole = match.group(0)
        return whole[: start - offset] + mask_for(secret_rule.kind, secret) + whole[end - offset :]

    return secret_rule.pattern.sub(replace, text)


def mask_text(text: str, counts: Counter[str] | None = None, found: set[str] | None = None) -> str:
    """`text` with every recognised secret masked; `counts` (if given) gains one per masked secret, by kind,
    and `found` (if given) the secret values themselves."""
    counts = Counter[str]() if counts is None else counts
    text = _mask_private_keys(text, counts, found)
    folded: str | None = None
    for secret_rule in RULES:
        if secret_rule.hints:
            if secret_rule.fold:
                folded = text.lower() if folded is None else folded
                haystack = folded
            else:
                haystack = text
            if not any(hint in haystack for hint in secret_rule.hints):
                continue
        before = sum(counts.values())
        text = _apply_rule(secret_rule, text, counts, found)
        if sum(counts.values()) != before:
            folded = None
    return text
