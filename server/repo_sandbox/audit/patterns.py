"""The secrets we recognise in text: one `SecretRule` per kind, in `RULES`, plus the mask they are replaced by.

`masking.mask_text` applies them (and `keys.mask_private_keys` for PEM blocks). Context rules (`password=...`,
`token: ...`) look for the value of a sensitive name; to keep source code readable they leave values that are
code, not literals (`os.environ["X"]`, `args.token`, `None`, `str`, `f(password=pw)`), placeholders (`${X}`,
`{{x}}`, `<x>`) and paths. Every rule's matches stay within one line and contain one of its hints.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from repo_sandbox.audit.labels import is_mask, mask_for

__all__ = ["RULES", "SecretRule", "is_mask", "mask_for", "rule"]

_B: Final = r"(?<![A-Za-z0-9_])"
"""Left boundary: the token does not continue a longer word."""

_SENSITIVE_WORDS: Final = (
    "password", "passwd", "passphrase", "pwd", "secret", "token", "key", "credentials", "credential",
    "sessionid", "session_id", "session-id",
)  # fmt: skip
"""How the name of a sensitive value ends (`db_password`, `GITHUB_TOKEN`, `x-api-key`, `SessionId`)."""
_KEY_PREFIX: Final = re.compile(r"(?:api|access|private|secret|signing|encryption|master|auth)[_-]?$", re.IGNORECASE)
"""`key` alone is too common a name (`sort_key`); `api_key`, `secret-key`, `privateKey` are sensitive."""

_CODE_WORDS: Final = frozenset(
    {
        "none", "null", "nil", "undefined", "true", "false", "str", "string", "int", "bool",
        "boolean", "bytes", "number", "any", "object", "optional", "dict", "list", "secretstr", "self",
        "this", "required", "void",
    }
)  # fmt: skip
"""Unquoted values that are code (types, keywords), not secrets: `password: str`, `token = None`."""

_DOTTED: Final = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+")
_IDENTIFIER: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PLACEHOLDER_STARTS: Final = ("$", "%(", "{", "<", "/", "~/", "./", "../", "@")


@dataclass(frozen=True, slots=True)
class SecretRule:
    """One kind of secret: a pattern, the group that holds the secret, and cheap literals that gate it."""

    kind: str
    pattern: re.Pattern[str]
    groups: tuple[int | str, ...] = (0,)
    """The group holding the secret: the first of these that took part in the match."""
    hints: tuple[str, ...] = ()
    """Every match contains one of these (lower-cased when `fold`): the rule runs only on lines that do."""
    fold: bool = False
    keep: Callable[[re.Match[str]], bool] | None = None
    """True when a candidate is not a secret after all (code, placeholder)."""
    trigger: re.Pattern[str] | None = None
    """When set, finds the hints instead of `str.find`: a hint counts only where it matches (e.g. `password`
    followed by `=`); one regex pass is faster than many finds for hints as common as `key`."""
    follow: str | None = None
    """The pattern that follows a hint in `trigger`."""

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
    follow: str | None = None,
) -> SecretRule:
    flags = re.IGNORECASE if fold else 0
    trigger = None if follow is None else re.compile("(?:" + "|".join(map(re.escape, hints)) + ")" + follow)
    return SecretRule(kind, re.compile(pattern, flags), groups, hints, fold, keep, trigger, follow)


def _assigned_value_is_code(match: re.Match[str]) -> bool:
    """The value of `name = value` is a code reference, a placeholder or a path, not a literal secret (or the
    name is a `key` that is not an api/secret/private... key)."""
    if match.group("name").lower() == "key" and not _KEY_PREFIX.search(
        match.string, max(0, match.start() - 11), match.start()
    ):
        return True
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
        r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])",  # access keys, not AIDA/AROA ids
        *("AKIA", "ASIA", "ABIA", "ACCA"),
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
        *("--password", "--passwd", "--token", "--api-key", "--apikey", "--secret", "--client-secret"),
        *("--access-token", "--auth-token"),
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
    rule(
        "password",
        r"<(password|passwd|secret|token|api[_-]?key)>([^<\n]{4,})</\1>",
        *("<password>", "<passwd>", "<secret>", "<token>", "<api_key>", "<api-key>", "<apikey>"),
        groups=(2,),
        fold=True,
    ),
    rule(
        "password",
        r"(?P<name>" + "|".join(_SENSITIVE_WORDS) + r")[\"']?[ \t]*(?:=|:(?!:))(?!=)[ \t]*"
        r"""(?:"(?P<q>[^"\n]*)"|'(?P<q2>[^'\n]*)'|(?P<u>[^\s"'`,;&()<>\[\]{}]+))""",
        *_SENSITIVE_WORDS,
        follow=r"[\"']?[ \t]*(?:=|:(?!:))(?!=)",
        groups=("q", "q2", "u"),
        fold=True,
        keep=_assigned_value_is_code,
    ),
)
"""Checked in order: specific shapes first, so their names label the mask and later rules skip masked text."""
