"""Layer 1: credentials with a shape of their own, written from each provider's published format.

Most carry a literal prefix (``glpat-``, ``xkeysib-``, ``dop_v1_``), so the prefix anchors the match and
the length and alphabet after it confirm it; a few have no prefix and need a provider word nearby (a
Twilio auth token is 32 hex characters, like any MD5). The order matters only where two formats
overlap: private key blocks first (their base64 would be chewed up piecemeal), Square's ``EAAA``
before Facebook's ``EAA``, URL credentials and headers after the vendor tokens, cards last.

Every repeated run is anchored by a literal or a look-behind and bounded where a lazy gap is needed, so
each rule runs in time linear in the text.
"""

from __future__ import annotations

import re

from app.lib.redaction.rules import Classifier, Rule, rule

_WORDY_SEGMENT = re.compile(r"[a-z]+[0-9]{0,3}|[0-9]{1,4}")
_DB_SCHEMES = frozenset(
    {"postgres", "postgresql", "mysql", "mariadb", "mongodb", "redis", "rediss", "amqp", "amqps", "mssql"}
)
_HEX_BODY = re.compile(r"[0-9a-f]{32}")
# Boundaries: a token starts where no token character precedes it and ends where none follows.
_B = r"(?<![A-Za-z0-9_-])"
_E = r"(?![A-Za-z0-9_-])"


def luhn_valid(digits: str) -> bool:
    """The Luhn checksum every payment card number satisfies."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _classify_sk(match: re.Match[str]) -> str | None:
    body = match.group("body")
    # "sk-" followed by hyphenated prose ("sk-learn-compatible-...") must survive. Random key material
    # always has a segment mixing case or letters and digits; prose is lowercase words and small numbers.
    if all(_WORDY_SEGMENT.fullmatch(segment) for segment in re.split(r"[-_]", body) if segment):
        return None
    if _HEX_BODY.fullmatch(body):
        return "dashscope_key"  # Alibaba DashScope keys are sk- + 32 lowercase hex
    return "openai_key"


def _wordy(kind: str) -> Classifier:
    """Accept the match unless its body after the prefix is hyphenated words ("xoxb-your-slack-token")."""

    def classify(match: re.Match[str]) -> str | None:
        body = match.group("body")
        if all(_WORDY_SEGMENT.fullmatch(segment) for segment in re.split(r"[-_]", body) if segment):
            return None
        return kind

    return classify


def _classify_card(match: re.Match[str]) -> str | None:
    digits = re.sub(r"[ -]", "", match.group(0))
    return "credit_card" if 13 <= len(digits) <= 19 and luhn_valid(digits) else None


def _classify_url(match: re.Match[str]) -> str | None:
    base = match.group("scheme").lower().split("+", 1)[0]  # postgresql+asyncpg, mongodb+srv
    return "database_url_password" if base in _DB_SCHEMES else "url_password"


def _mixed(match: re.Match[str]) -> str | None:
    """Facebook tokens: the body is random, so it mixes letters and digits (prose after EAA does not)."""
    body = match.group(0)[3:]
    has_digit = any(c.isdigit() for c in body)
    has_upper = any(c.isupper() for c in body)
    has_lower = any(c.islower() for c in body)
    return "facebook_access_token" if has_digit and has_upper and has_lower else None


RULES: tuple[Rule, ...] = (
    # PEM/OpenSSH/PGP blocks, multi-line. The body is an unrolled possessive loop that stops at the
    # first "-----"; a missing END (truncated paste) still redacts everything up to that point.
    rule(
        r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
        r"[^-]*+(?:-(?!----)[^-]*+)*+"
        r"(?:-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----)?",
        "private_key",
        needles=("private key",),
    ),
    rule(
        r"(?<![A-Za-z0-9])AGE-SECRET-KEY-1[02-9AC-HJ-NP-Z]{58}(?![A-Za-z0-9])",
        "age_secret_key",
        needles=("age-secret-key-1",),
    ),
    # A 32-byte secp256k1 / ed25519 private key written as 0x + 64 hex (wallets, hardhat, foundry).
    # Addresses are 0x + 40 hex and survive.
    rule(r"(?<![A-Za-z0-9])0x[0-9a-fA-F]{64}(?![0-9A-Za-z])", "hex_private_key", needles=("0x",)),
    # Engram's own API keys: egm_<8 hex public prefix>_<secret>. The prefix alone (in key listings and
    # `engram key revoke egm_1a2b3c4d`) is public and survives.
    rule(r"(?<![A-Za-z0-9_])egm_[0-9a-f]{8}_[A-Za-z0-9_-]{20,}", "engram_api_key", needles=("egm_",)),
    rule(_B + r"sk-ant-[A-Za-z0-9_-]{20,}", "anthropic_key", needles=("sk-ant-",)),
    rule(_B + r"sk-(?P<body>[A-Za-z0-9_-]{20,})", _classify_sk, needles=("sk-",)),
    rule(
        _B + r"(?:gsk|xai|pplx)[_-][A-Za-z0-9]{32,}" + _E, "llm_provider_key", needles=("gsk", "xai", "pplx")
    ),
    rule(
        r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])",
        "aws_access_key_id",
        needles=("akia", "asia", "abia", "acca"),
    ),
    # 40-char AWS secrets are indistinguishable from other base64, so they need the key name nearby.
    rule(
        r"(?i:aws[_-]?secret(?:[_-]?access)?[_-]?key|secret[_-]?access[_-]?key)"
        r"[\"']?[ \t]*(?::=|=>|[:=])[ \t]*"
        r"[\"']?(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
        "aws_secret_key",
        needles=("secret",),
    ),
    rule(
        r"(?<![A-Za-z0-9])LTAI[A-Za-z0-9]{12,30}(?![A-Za-z0-9])", "alibaba_access_key_id", needles=("ltai",)
    ),
    # Azure storage and Service Bus connection strings: the key after AccountKey= / SharedAccessKey=.
    rule(
        r"(?i:\b(?:Account|SharedAccess)Key)[ \t]*=[ \t]*(?P<secret>[A-Za-z0-9+/]{20,}={0,2})",
        "azure_storage_key",
        needles=("accountkey", "sharedaccesskey"),
    ),
    # A shared access signature's sig= parameter (URL-encoded base64 of an HMAC-SHA256, 43+ chars).
    rule(
        r"(?<![A-Za-z0-9_])(?i:sig)=(?P<secret>[A-Za-z0-9%+/]{30,}(?:=|%3[Dd]){0,2})",
        "azure_sas_signature",
        needles=("sig=",),
    ),
    # Entra ID (Azure AD) client secrets: 3 chars, "8Q~", then 31-34 more.
    rule(
        r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.-]{3}8Q~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])",
        "azure_client_secret",
        needles=("8q~",),
    ),
    rule(
        r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
        "github_token",
        needles=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    rule(
        _B + r"(?:gl(?:pat|dt|rt|ptt|oas|cbt|imt|ft|soat|agent|ffct|wt)-[A-Za-z0-9_.-]{20,}"
        r"|GR1348941[A-Za-z0-9_-]{20,})",
        "gitlab_token",
        needles=("gl", "gr1348941"),
    ),
    rule(
        r"(?<![A-Za-z0-9-])(?:xox[abposre]|xapp)-(?P<body>[A-Za-z0-9-]{10,})",
        _wordy("slack_token"),
        needles=("xox", "xapp-"),
    ),
    rule(
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9_/-]+)",
        "slack_webhook",
        needles=("hooks.slack.com",),
    ),
    rule(
        r"https?://(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/"
        r"(?P<secret>[A-Za-z0-9_-]{60,100})",
        "discord_webhook",
        needles=("/api/webhooks/",),
    ),
    # Discord bot tokens: base64 of the bot's snowflake id (so M/N/O first), a 6-char timestamp, an HMAC.
    rule(_B + r"[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}" + _E, "discord_bot_token"),
    rule(
        r"(?<![A-Za-z0-9_])(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9+/=]{24,})",
        "stripe_key",
        needles=("_live_", "_test_", "whsec_"),
    ),
    rule(_B + r"shp(?:at|ca|pa|ss)_[0-9a-fA-F]{32}" + _E, "shopify_token", needles=("shp",)),
    rule(_B + r"do[opr]_v1_[0-9a-f]{64}" + _E, "digitalocean_token", needles=("_v1_",)),
    rule(_B + r"x(?:keysib|smtpsib)-[0-9a-f]{64}-[A-Za-z0-9]{16}" + _E, "brevo_key", needles=("sib-",)),
    # Mailgun: legacy key-<32>, current <32 hex>-<8 hex>-<8 hex> (not a UUID's 8-4-4-4-12).
    rule(_B + r"(?:key-[0-9a-z]{32}|[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8})" + _E, "mailgun_key"),
    rule(_B + r"[0-9a-f]{32}-us[0-9]{1,2}" + _E, "mailchimp_key", needles=("-us",)),
    rule(r"(?<![A-Za-z0-9_:-])[0-9]{8,10}:AA[A-Za-z0-9_-]{33}" + _E, "telegram_bot_token", needles=(":aa",)),
    rule(_B + r"GOCSPX-[A-Za-z0-9_-]{28}" + _E, "google_oauth_client_secret", needles=("gocspx-",)),
    rule(r"(?<![A-Za-z0-9_:/-])1//0[A-Za-z0-9_-]{40,}", "google_oauth_refresh_token", needles=("1//0",)),
    rule(r"(?<![A-Za-z0-9_.-])ya29\.[A-Za-z0-9_-]{30,}", "google_oauth_access_token", needles=("ya29.",)),
    rule(_B + r"AIza[A-Za-z0-9_-]{35}", "google_api_key", needles=("aiza",)),
    rule(_B + r"d(?:api|ose)[0-9a-f]{32}(?:-[0-9])?" + _E, "databricks_token", needles=("dapi", "dose")),
    rule(_B + r"pypi-Ag[A-Za-z0-9_-]{50,}", "pypi_token", needles=("pypi-ag",)),
    rule(_B + r"dckr_(?:pat|oat)_[A-Za-z0-9_-]{27,}", "docker_hub_token", needles=("dckr_",)),
    rule(r"(?<![A-Za-z0-9_.-])hv[sbr]\.[A-Za-z0-9_-]{24,}", "vault_token", needles=("hvs.", "hvb.", "hvr.")),
    rule(
        r"(?<![A-Za-z0-9])(?:NR(?:AK|II|JS|AA|IQ|RA|SP)-[A-Z0-9]{27,32}|[0-9a-f]{36}NRAL)(?![A-Za-z0-9])",
        "new_relic_key",
        needles=("nrak-", "nrii-", "nrjs-", "nraa-", "nriq-", "nrra-", "nrsp-", "nral"),
    ),
    rule(
        _B
        + r"(?:glc_[A-Za-z0-9+/=_-]{32,}|glsa_[A-Za-z0-9]{32}_[0-9a-f]{8}|eyJrIjoi[A-Za-z0-9+/]{40,}={0,2})",
        "grafana_token",
        needles=("glc_", "glsa_", "eyjrijoi"),
    ),
    rule(r"(?<![A-Za-z0-9])EAAA[A-Za-z0-9_-]{60}(?![A-Za-z0-9_-])", "square_token", needles=("eaaa",)),
    rule(_B + r"sq0(?:atp|csp)-[A-Za-z0-9_-]{22,43}" + _E, "square_token", needles=("sq0",)),
    rule(r"(?<![A-Za-z0-9])EAA[A-Za-z0-9]{30,}(?![A-Za-z0-9])", _mixed, needles=("eaa",)),
    rule(r"(?<![A-Za-z0-9])AC[0-9a-f]{32}(?::[0-9a-f]{32})?(?![A-Za-z0-9])", "twilio_account_sid"),
    rule(r"(?<![A-Za-z0-9])SK[0-9a-f]{32}(?![A-Za-z0-9])", "twilio_api_key"),
    # Twilio auth tokens are 32 hex with no prefix: only with "twilio" within a few words before.
    rule(
        r"(?i:twilio)[^\n]{0,48}?(?<![0-9A-Za-z])(?P<secret>[0-9a-f]{32})(?![0-9A-Za-z])",
        "twilio_auth_token",
        needles=("twilio",),
    ),
    rule(_B + r"HRKU-[A-Za-z0-9_-]{30,}" + _E, "heroku_api_key", needles=("hrku-",)),
    rule(
        r"(?i:heroku)[^\n]{0,48}?(?<![0-9A-Za-z-])"
        r"(?P<secret>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?![0-9A-Za-z-])",
        "heroku_api_key",
        needles=("heroku",),
    ),
    rule(
        r"(?<![A-Za-z0-9])(?:ATATT3[A-Za-z0-9_=-]{40,}|ATBB[A-Za-z0-9]{28,})(?![A-Za-z0-9_=-])",
        "atlassian_token",
        needles=("atatt3", "atbb"),
    ),
    rule(r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}", "huggingface_token", needles=("hf_",)),
    rule(r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36,}", "npm_token", needles=("npm_",)),
    rule(r"(?<![A-Za-z0-9_.-])SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}", "sendgrid_key", needles=("sg.",)),
    rule(
        _B + r"(?:lin_api_[A-Za-z0-9]{40}|ntn_[A-Za-z0-9]{40,}|PMAK-[0-9a-f]{24}-[0-9a-f]{34}"
        r"|sntry[su]_[A-Za-z0-9_=+/]{40,}|dp\.(?:pt|st|sa|ct)\.[A-Za-z0-9]{40,}|pul-[0-9a-f]{40}"
        r"|r8_[A-Za-z0-9]{37})" + _E,
        "service_token",
        needles=("lin_api_", "ntn_", "pmak-", "sntrys_", "sntryu_", "dp.", "pul-", "r8_"),
    ),
    rule(
        r"(?<![A-Za-z0-9_.-])[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}",
        "terraform_token",
        needles=(".atlasv1.",),
    ),
    # Header and payload are base64url JSON, so the first segment always starts with '{"' == "eyJ".
    rule(
        r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{7,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*", "jwt", needles=("eyj",)
    ),
    # scheme://user:password@host -> only the password goes; "@" inside an unencoded password is
    # handled by the greedy run backing off to the last "@" before the path.
    rule(
        r"(?<![A-Za-z0-9+.-])(?P<scheme>[A-Za-z][A-Za-z0-9+.-]{1,30})://[^:@/\s]{0,256}:"
        r"(?!\[REDACTED:)(?P<secret>[^\s/]+)@",
        _classify_url,
        needles=("://",),
    ),
    rule(
        r"(?i:\bbearer)[ \t]+(?!\[REDACTED:)(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)",
        "bearer_token",
        needles=("bearer",),
    ),
    rule(
        r"(?i:authorization)[\"']?[ \t]*:[ \t]*[\"']?(?i:basic)[ \t]+(?P<secret>[A-Za-z0-9+/]{8,}=*)",
        "basic_auth",
        needles=("basic",),
    ),
    # Cards: contiguous or in 4-x-x(-x) groups with one consistent separator. The leading digit must be
    # 2-6 (every major network), which keeps epoch-millisecond timestamps (1...) and most ids out.
    rule(
        r"(?<![0-9A-Za-z_.-])"
        r"(?:[2-6][0-9]{12,18}"
        r"|[2-6][0-9]{3}(?P<sep>[ -])[0-9]{4,6}(?P=sep)[0-9]{4,5}(?:(?P=sep)[0-9]{1,4}){0,2})"
        r"(?![0-9A-Za-z_]|[.-][0-9])",
        _classify_card,
    ),
)
