"""The redaction corpora: every credential format Engram redacts, and look-alikes it must leave alone.

No value here is a usable credential. Each is generated at import from a seeded random source with the
format's published prefix, alphabet and length, so the shapes are right and the values are noise (and a
secret scanner reading this file finds no literal to flag). The unit tests check each case through
`redact`; tests/integration/test_redaction_everywhere.py sends every sentence through every write path.
"""

from __future__ import annotations

import base64
import random
import string
from typing import NamedTuple

HEX = "0123456789abcdef"
ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "_-"
B64 = ALNUM + "+/"
UPPER_ALNUM = string.ascii_uppercase + string.digits
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def fake(alphabet: str, length: int, seed: str) -> str:
    """`length` characters of `alphabet`, the same for the same seed on every run."""
    rng = random.Random(f"engram-redaction-corpus:{seed}")
    return "".join(rng.choice(alphabet) for _ in range(length))


def b64url(raw: str) -> str:
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def pem(label: str) -> str:
    body = "\n".join(fake(B64, 64, f"pem-{label}-{i}") for i in range(4))
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"


class Case(NamedTuple):
    kind: str
    secret: str  # the substring that must disappear
    sentence: str  # "{}" marks where the secret goes; the rest must survive


def render(case: Case) -> str:
    return case.sentence.replace("{}", case.secret)


AWS_SECRET = fake(B64, 40, "aws-secret")
JWT = ".".join(
    [
        b64url('{"alg":"HS256","typ":"JWT"}'),
        b64url('{"sub":"user-123","name":"Fake Person","iat":1516239022}'),
        fake(URLSAFE, 43, "jwt-sig"),
    ]
)
_SAS = fake(ALNUM, 20, "sas-a") + "%2B" + fake(ALNUM, 20, "sas-b") + "%2F" + fake(ALNUM, 3, "sas-c") + "%3D"
_SNOWFLAKE = base64.b64encode(b"104857600123456789").decode().rstrip("=")

# The formats that existed before the layers, then (issue 23) the provider formats the probe found
# missing, then the other scanner-known ones, then the phrasings, then the entropy layer's cases.
SECRETS: dict[str, Case] = {
    "openai_legacy": Case(
        "openai_key", "sk-" + fake(ALNUM, 48, "openai"), "set OPENAI_API_KEY to {} and restart"
    ),
    "openai_project": Case(
        "openai_key", "sk-proj-" + fake(URLSAFE, 60, "openai-proj"), "the new key {} works"
    ),
    "dashscope": Case("dashscope_key", "sk-" + fake(HEX, 32, "dashscope"), "qwen client uses {} today"),
    "anthropic": Case(
        "anthropic_key", "sk-ant-api03-" + fake(URLSAFE, 80, "anthropic"), "claude key {} was leaked"
    ),
    "groq": Case("llm_provider_key", "gsk_" + fake(ALNUM, 52, "groq"), "groq client with {} set"),
    "aws_access_key_id": Case(
        "aws_access_key_id", "AKIA" + fake(UPPER_ALNUM, 16, "akia"), "iam user key {} is old"
    ),
    "aws_sts_key_id": Case(
        "aws_access_key_id", "ASIA" + fake(UPPER_ALNUM, 16, "asia"), "session key {} expires"
    ),
    "aws_secret_ini": Case("aws_secret_key", AWS_SECRET, "[default]\naws_secret_access_key = {}\nregion=x"),
    "aws_secret_json": Case("aws_secret_key", AWS_SECRET, 'creds {"SecretAccessKey": "{}"} end'),
    "alibaba": Case("alibaba_access_key_id", "LTAI" + fake(ALNUM, 20, "ltai"), "aliyun id {} for oss"),
    "github_ghp": Case("github_token", "ghp_" + fake(ALNUM, 36, "ghp"), "clone with {} please"),
    "github_gho": Case("github_token", "gho_" + fake(ALNUM, 36, "gho"), "oauth token {} granted"),
    "github_ghs": Case("github_token", "ghs_" + fake(ALNUM, 36, "ghs"), "actions token {} in ci"),
    "github_pat": Case(
        "github_token",
        "github_pat_" + fake(ALNUM, 22, "pat1") + "_" + fake(ALNUM, 59, "pat2"),
        "fine-grained {} ok",
    ),
    "slack_bot": Case(
        "slack_token", "xoxb-1234567890-1234567890123-" + fake(ALNUM, 24, "xoxb"), "bot uses {} now"
    ),
    "slack_user": Case("slack_token", "xoxp-9876543210-" + fake(ALNUM, 24, "xoxp"), "user token {} in env"),
    "slack_webhook": Case(
        "slack_webhook",
        "T00000000/B00000000/" + fake(ALNUM, 24, "slackhook"),
        "post to https://hooks.slack.com/services/{} daily",
    ),
    "stripe_live": Case("stripe_key", "sk_live_" + fake(ALNUM, 24, "stripe"), "charge with {} in prod"),
    "stripe_restricted": Case(
        "stripe_key", "rk_live_" + fake(ALNUM, 24, "stripe-rk"), "restricted {} for reports"
    ),
    "stripe_test": Case("stripe_key", "sk_test_" + fake(ALNUM, 24, "stripe-test"), "sandbox {} is fine"),
    "stripe_webhook": Case("stripe_key", "whsec_" + fake(ALNUM, 32, "whsec"), "verify with {} on receipt"),
    "google": Case("google_api_key", "AIza" + fake(URLSAFE, 35, "aiza"), "maps key {} restricted"),
    "jwt": Case("jwt", JWT, "session cookie {} decoded"),
    "bearer_header": Case(
        "bearer_token", fake(ALNUM, 36, "bearer"), "sent Authorization: Bearer {} upstream"
    ),
    "bearer_curl": Case(
        "bearer_token", fake(ALNUM, 24, "bearer-curl"), "curl -H 'authorization: bearer {}' api"
    ),
    "basic_auth": Case("basic_auth", b64url("admin:fakepass"), "header Authorization: Basic {} seen"),
    "pem_rsa": Case("private_key", pem("RSA PRIVATE KEY"), "here is the key:\n{}\nthanks"),
    "pem_ec": Case("private_key", pem("EC PRIVATE KEY"), "ec key\n{}\ndone"),
    "pem_openssh": Case("private_key", pem("OPENSSH PRIVATE KEY"), "id_ed25519:\n{}\nbye"),
    "pem_generic": Case("private_key", pem("PRIVATE KEY"), "pkcs8 {} end"),
    "pem_encrypted": Case("private_key", pem("ENCRYPTED PRIVATE KEY"), "encrypted {} end"),
    "pem_pgp": Case("private_key", pem("PGP PRIVATE KEY BLOCK"), "gpg export\n{}\nok"),
    "password_eq": Case("password_assignment", "hunter2", "login with password=hunter2 user=bob"),
    "passwd_quoted": Case("password_assignment", "S3cr3t!pass", "config passwd: 'S3cr3t!pass' loaded"),
    "pwd_dq": Case("password_assignment", "Xk9#mm2", 'db pwd="Xk9#mm2" set'),
    "env_password": Case("password_assignment", "fakeDbPass77", "export DB_PASSWORD=fakeDbPass77 now"),
    "json_password": Case("password_assignment", "pa55-word", 'body {"password": "pa55-word", "user": "x"}'),
    "token_colon": Case("token_assignment", "abc123def456ghi", "the config has token: abc123def456ghi set"),
    "access_token_query": Case(
        "token_assignment", "ya29fakeAccess", "GET /cb?access_token=ya29fakeAccess&x=1"
    ),
    "auth_token": Case("token_assignment", "tw1l10fake", "the relay auth_token = tw1l10fake here"),
    "api_key_quoted": Case("api_key_assignment", "k-9f8e7d6c5b4a", 'client(api_key = "k-9f8e7d6c5b4a")'),
    "apikey": Case("api_key_assignment", "q1w2e3r4t5", "url ?apikey=q1w2e3r4t5 done"),
    "x_api_key_header": Case("api_key_assignment", "hdrFakeKey01", "sent X-Api-Key: hdrFakeKey01 upstream"),
    "client_secret": Case("secret_assignment", "cs-fake-0042", "oauth client_secret: cs-fake-0042 stored"),
    "secret_plain": Case("secret_assignment", "s3kr1tvalue", "app secret=s3kr1tvalue in env"),
    "postgres_url": Case("database_url_password", "pgFake9", "dsn postgres://app:pgFake9@db:5432/engram ok"),
    "postgresql_asyncpg": Case(
        "database_url_password", "p@ss9", "url postgresql+asyncpg://app:p@ss9@db.internal/engram ok"
    ),
    "mysql_url": Case("database_url_password", "myFake1", "mysql://root:myFake1@127.0.0.1:3306/app used"),
    "mongodb_srv": Case("database_url_password", "mgFake2", "mongodb+srv://svc:mgFake2@cluster0.x.net/db ok"),
    "redis_url": Case("database_url_password", "rdFake3", "cache redis://:rdFake3@cache:6379/0 ok"),
    "amqp_url": Case("database_url_password", "mqFake4", "broker amqp://guest:mqFake4@rabbit/vhost ok"),
    "https_userinfo": Case("url_password", "webFake5", "fetch https://bob:webFake5@example.com/x ok"),
    "ado_connection_string": Case(
        "password_assignment",
        "AdoFake#6",
        "Server=db;Database=app;User Id=sa;Password=AdoFake#6;Encrypt=true",
    ),
    "visa_spaced": Case("credit_card", "4111 1111 1111 1111", "card {} exp 12/29"),
    "mastercard_plain": Case("credit_card", "5555555555554444", "paid with {} yesterday"),
    "amex_dashed": Case("credit_card", "3782-822463-10005", "amex {} on file"),
    "sendgrid": Case(
        "sendgrid_key", "SG." + fake(URLSAFE, 22, "sg1") + "." + fake(URLSAFE, 43, "sg2"), "mailer key {} set"
    ),
    "npm": Case("npm_token", "npm_" + fake(ALNUM, 36, "npm"), "publish with {} token"),
    "huggingface": Case("huggingface_token", "hf_" + fake(ALNUM, 34, "hf"), "download with {} from hub"),
    "twilio_api_key": Case("twilio_api_key", "SK" + fake(HEX, 32, "twilio-sk"), "twilio sid {} created"),
    "engram_key": Case("engram_api_key", "egm_1a2b3c4d_" + fake(URLSAFE, 43, "egm"), "engram key {} works"),
    "engram_key_bearer": Case(
        "engram_api_key",
        "egm_0f0f0f0f_" + fake(URLSAFE, 43, "egm2"),
        "sent Authorization: Bearer {} upstream",
    ),
    # Issue 23's list.
    "azure_account_key": Case(
        "azure_storage_key",
        fake(B64, 86, "azure-key") + "==",
        "DefaultEndpointsProtocol=https;AccountName=fakeacct;AccountKey={};EndpointSuffix=core.windows.net",
    ),
    "azure_service_bus": Case(
        "azure_storage_key",
        fake(B64, 43, "azure-sb") + "=",
        "Endpoint=sb://fake.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={}",
    ),
    "azure_sas_sig": Case(
        "azure_sas_signature",
        _SAS,
        "download https://fakeacct.blob.core.windows.net/c/a.txt?sv=2022-11-02&sp=r&se=2026-01-01&sig={} now",
    ),
    "azure_client_secret": Case(
        "azure_client_secret",
        fake(ALNUM, 3, "entra") + "8Q~" + fake(ALNUM + "_~.-", 34, "entra2"),
        "entra app {} rotated",
    ),
    "twilio_auth_token": Case(
        "twilio_auth_token", fake(HEX, 32, "twilio-auth"), "Twilio auth token is {} for prod"
    ),
    "twilio_env": Case("twilio_auth_token", fake(HEX, 32, "twilio-env"), "export TWILIO_AUTH_TOKEN={}"),
    "twilio_account_sid": Case(
        "twilio_account_sid", "AC" + fake(HEX, 32, "twilio-ac"), "account {} texts us"
    ),
    "discord_bot_token": Case(
        "discord_bot_token",
        _SNOWFLAKE + "." + fake(URLSAFE, 6, "discord-ts") + "." + fake(URLSAFE, 38, "discord-hmac"),
        "the bot logs in with {} on start",
    ),
    "discord_webhook": Case(
        "discord_webhook",
        fake(URLSAFE, 68, "discord-hook"),
        "alerts go to https://discord.com/api/webhooks/104857600123456789/{} now",
    ),
    "gitlab_pat": Case("gitlab_token", "glpat-" + fake(URLSAFE, 20, "glpat"), "gitlab token {} for ci"),
    "gitlab_deploy": Case("gitlab_token", "gldt-" + fake(URLSAFE, 20, "gldt"), "registry pull with {} works"),
    "gitlab_runner": Case(
        "gitlab_token", "glrt-" + fake(URLSAFE, 20, "glrt"), "runner registered as {} today"
    ),
    "shopify_access": Case("shopify_token", "shpat_" + fake(HEX, 32, "shpat"), "shop admin {} for orders"),
    "shopify_shared": Case("shopify_token", "shpss_" + fake(HEX, 32, "shpss"), "app shared secret {} set"),
    "digitalocean_pat": Case(
        "digitalocean_token", "dop_v1_" + fake(HEX, 64, "dop"), "doctl auth init with {} ok"
    ),
    "digitalocean_oauth": Case(
        "digitalocean_token", "doo_v1_" + fake(HEX, 64, "doo"), "oauth grant {} stored"
    ),
    "brevo_api": Case(
        "brevo_key",
        "xkeysib-" + fake(HEX, 64, "brevo") + "-" + fake(ALNUM, 16, "brevo2"),
        "brevo mailer {} on",
    ),
    "brevo_smtp": Case(
        "brevo_key",
        "xsmtpsib-" + fake(HEX, 64, "brevo-smtp") + "-" + fake(ALNUM, 16, "b3"),
        "smtp relay {} set",
    ),
    "mailgun_legacy": Case("mailgun_key", "key-" + fake(HEX, 32, "mailgun"), "mailgun sends with {} today"),
    "mailgun_current": Case(
        "mailgun_key",
        fake(HEX, 32, "mg1") + "-" + fake(HEX, 8, "mg2") + "-" + fake(HEX, 8, "mg3"),
        "mg private {} set",
    ),
    "mailchimp": Case("mailchimp_key", fake(HEX, 32, "mailchimp") + "-us14", "newsletter sync uses {} now"),
    "telegram_bot": Case(
        "telegram_bot_token",
        "7012345678:AA" + fake(URLSAFE, 33, "telegram"),
        "the telegram bot is {} on prod",
    ),
    "google_oauth_secret": Case(
        "google_oauth_client_secret", "GOCSPX-" + fake(URLSAFE, 28, "gocspx"), "oauth client {} for login"
    ),
    "google_refresh_token": Case(
        "google_oauth_refresh_token", "1//0" + fake(URLSAFE, 99, "google-refresh"), "offline access {} saved"
    ),
    "google_access_token": Case(
        "google_oauth_access_token", "ya29." + fake(URLSAFE, 120, "ya29"), "drive call {} ok"
    ),
    "databricks": Case("databricks_token", "dapi" + fake(HEX, 32, "dapi"), "workspace access {} granted"),
    "pypi": Case(
        "pypi_token", "pypi-AgEIcHlwaS5vcmc" + fake(URLSAFE, 150, "pypi"), "twine upload with {} done"
    ),
    "docker_hub": Case(
        "docker_hub_token", "dckr_pat_" + fake(URLSAFE, 27, "dckr"), "docker login with {} ok"
    ),
    "vault_service": Case("vault_token", "hvs." + fake(URLSAFE, 91, "hvs"), "VAULT_TOKEN {} exported"),
    "vault_batch": Case("vault_token", "hvb." + fake(URLSAFE, 120, "hvb"), "batch {} for the job"),
    "new_relic_user": Case("new_relic_key", "NRAK-" + fake(UPPER_ALNUM, 27, "nrak"), "new relic user {} set"),
    "new_relic_license": Case("new_relic_key", fake(HEX, 36, "nral") + "NRAL", "apm license {} in agent"),
    "grafana_service_account": Case(
        "grafana_token",
        "glsa_" + fake(ALNUM, 32, "glsa") + "_" + fake(HEX, 8, "glsa2"),
        "grafana sa {} for dashboards",
    ),
    "grafana_cloud": Case(
        "grafana_token",
        "glc_" + b64url('{"o":"123","n":"fake","k":"' + fake(ALNUM, 24, "glc") + '"}'),
        "cloud {} push",
    ),
    "facebook_token": Case(
        "facebook_access_token", "EAAB" + fake(ALNUM, 150, "facebook"), "graph api page {} works"
    ),
    "square_access": Case("square_token", "EAAA" + fake(URLSAFE, 60, "square"), "square payments {} live"),
    "square_legacy": Case("square_token", "sq0atp-" + fake(URLSAFE, 22, "sq0atp"), "old square {} retired"),
    "square_app_secret": Case(
        "square_token", "sq0csp-" + fake(URLSAFE, 43, "sq0csp"), "square app {} rotated"
    ),
    "hex_private_key": Case("hex_private_key", "0x" + fake(HEX, 64, "eth"), "wallet import {} into metamask"),
    "age_secret_key": Case(
        "age_secret_key", "AGE-SECRET-KEY-1" + fake(BECH32, 58, "age"), "age identity {} kept"
    ),
    # Other formats a scanner knows.
    "heroku_new": Case("heroku_api_key", "HRKU-AA" + fake(URLSAFE, 58, "heroku"), "heroku cli {} logged in"),
    "heroku_uuid": Case(
        "heroku_api_key", "8f2c1d4e-5a6b-4c7d-9e8f-0a1b2c3d4e5f", "HEROKU_API_KEY is {} in ci"
    ),
    "atlassian": Case(
        "atlassian_token", "ATATT3xFfGF0" + fake(URLSAFE, 180, "atatt"), "jira api {} for sync"
    ),
    "bitbucket_app": Case("atlassian_token", "ATBB" + fake(ALNUM, 32, "atbb"), "bitbucket clone {} ok"),
    "linear": Case("service_token", "lin_api_" + fake(ALNUM, 40, "linear"), "linear sync {} on"),
    "postman": Case(
        "service_token", "PMAK-" + fake(HEX, 24, "pmak") + "-" + fake(HEX, 34, "pmak2"), "postman {} set"
    ),
    "doppler": Case("service_token", "dp.pt." + fake(ALNUM, 43, "doppler"), "doppler run {} works"),
    "terraform": Case(
        "terraform_token",
        fake(ALNUM, 14, "tf") + ".atlasv1." + fake(URLSAFE, 67, "tf2"),
        "terraform login {} ok",
    ),
    # Key-value phrasings in prose.
    "my_password_is": Case("password_assignment", "Tr0ub4dor&3", "my password is Tr0ub4dor&3 for the bank"),
    "password_was_quoted": Case(
        "password_assignment", "correct horse", "the password was 'correct horse' then"
    ),
    "pw_colon": Case("password_assignment", "Hunt3r!", "email pw: Hunt3r! (old)"),
    "pass_eq": Case("password_assignment", "letm3in", "router pass=letm3in on the label"),
    "passwd_space": Case("password_assignment", "Zq7-pass", "ran passwd Zq7-pass on the box"),
    # Eight digits: the integration test looks for each secret in whole responses, full of ids and times.
    "pin_is": Case("password_assignment", "90817263", "the PIN code for the alarm is 90817263."),
    "wifi_password": Case(
        "password_assignment", "BlueFrog42", "our wifi password is BlueFrog42, tell guests"
    ),
    "authorization_token": Case(
        "authorization_header", fake(HEX, 40, "auth-token"), "curl -H 'Authorization: Token {}' the api"
    ),
    "authorization_bot": Case(
        "authorization_header", fake(URLSAFE, 40, "auth-bot"), "header Authorization: Bot {} sent"
    ),
    "deploy_token_hex": Case(
        "token_assignment", fake(HEX, 40, "deploy"), "the deploy token is {} for staging"
    ),
    "api_key_for": Case(
        "api_key_assignment", fake(ALNUM, 32, "api-for"), "the api key for the billing service is {} today"
    ),
    "secret_changed_to": Case(
        "secret_assignment", fake(ALNUM, 24, "secret-to"), "webhook secret was changed to {} now"
    ),
    "repeated_key": Case("password_assignment", "x7Kq!", "password: password: x7Kq!"),
    "repeated_key_mixed": Case("password_assignment", "plainvalue", "Password: DB_PASSWORD=plainvalue"),
    "repeated_token_key": Case("token_assignment", "zz9top", "token: access_token: zz9top"),
    # High-entropy tokens in credential context.
    "entropy_far_key": Case(
        "high_entropy_secret", fake(ALNUM, 32, "entropy1"), "the staging key, in case you need it, is {} ok"
    ),
    "entropy_credentials": Case(
        "high_entropy_secret", fake(B64, 40, "entropy2"), "credentials for the relay - {} - keep safe"
    ),
}


# Text with ids, numbers and credential words that is not a secret: `redact` must return it unchanged.
LOOKALIKES: dict[str, str] = {
    "git_sha": "merged in commit 3f786850e387550fdab836ed7e6dc881de23001b yesterday",
    "git_short_sha": "fixed by a1b2c3d on main",
    "git_checkout": "git checkout 9fceb02d0ae598e95dc970b74767f19372d61af8 -- app/",
    "git_token_fix": "the token refresh fix landed in commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
    "git_revert": "git revert e83c5163316f89bfbde7d9ab23ca2e25604af290 broke the auth tests",
    "uuid": "memory 123e4567-e89b-12d3-a456-426614174000 was recalled",
    "uuid_digits": "id 12345678-1234-1234-1234-123456789012 stored",
    "token_id_uuid": "the token id is 3b241101-e2bb-4255-8caf-4136c566a962 in the audit log",
    "key_id_uuid": "api key id 7c9e6679-7425-40de-944b-e07fc1f90ae7 was revoked",
    "password_policy": "the password policy requires 12 characters",
    "reset_password": "reset your password in settings",
    "password_reset_sent": "password reset link sent to alice@example.com",
    "password_is_strong": "my password is strong enough now",
    "password_in_vault": "the password is in the vault",
    "password_is_length": "the password is 12 characters long",
    "passport": "my passport number expires in 2027",
    "passport_colon": "Passport: renewed last spring",
    "bypass": "bypass: use the side door",
    "compass": "compass: north by north-west",
    "token_economy": "the token economy of the game rewards quests",
    "token_budget": "token budget of 1024",
    "max_tokens": "max_tokens: 1024 and token_budget=2048 and tokens_used=17",
    "tokenizer": "tokenizer: cl100k_base",
    "token_expired": "my token is expired",
    "token_expires_in": "the deploy token expires in 30 days",
    "key_to_success": "the key to success is patience",
    "secret_ingredient": "the secret ingredient is love",
    "secret_prose": "the secret to good bread is patience",
    "pin_tweet": "pin the tweet to the top",
    "pin_length": "my pin is 12 digits? no, 6",
    "api_key_rotation": "api key rotation is due on Friday",
    "sk_learn": "we use sk-learn for the baseline",
    "scikit_learn": "pip install scikit-learn",
    "sk_hyphenated_prose": "see the sk-learn-compatible-pipeline-wrapper-v2-0 docs",
    "version": "upgrade to v2.13.0 today",
    "semver_pre": "released 1.2.3-beta.4 last week",
    "version_build": "build 2024.06.01-rc3+sha.5114f85 shipped",
    "akia_alone": "keys starting with AKIA are long-term",
    "luhn_fail": "reference 4111111111111112 is not a card",
    "phone_us": "call +1 (415) 555-0132 after noon",
    "phone_uk": "call +44 20 7946 0958 tomorrow",
    "phone_plain": "my number is 4155550132 if you need me",
    "iso_date": "due 2024-06-01 at the latest",
    "iso_datetime": "at 2024-06-01T12:30:00Z it ran",
    "two_dates": "window 2024-01-15 2024-01-16 only",
    "ipv4": "server 192.168.1.10 responded",
    "ipv6": "link-local fe80::1ff:fe23:4567:890a is up",
    "bearer_of_bad_news": "I hate being the Bearer of bad news",
    "password_empty": "password: ",
    "password_null": "password: null",
    "sha256": "image sha256:" + "ab12cd34" * 8 + " pulled",
    "base64_word": "aGVsbG8= is hello in base64",
    "base64_sentence": "the base64 of hello there friend is aGVsbG8gdGhlcmUgZnJpZW5k, decoded",
    "pg_no_password": "connect to postgresql://localhost/db first",
    "pg_user_only": "connect to postgresql://app@db:5432/engram first",
    "https_user_only": "open https://user@host for access",
    "https_port": "see https://example.com:8443/path?q=1 for docs",
    "url_with_id": "the api docs are at https://api.example.com/v1/keys/a1b2c3d4e5f6a7b8c9d0",
    "ghp_prose": "GitHub tokens use the ghp_ prefix",
    "ltai_prose": "Alibaba ids start with LTAI usually",
    "order_number": "order #100234-77 shipped",
    "order_long": "order number 7781-2231-9901-4432 is on its way",
    "tracking": "tracking 1Z999AA10123456784 arrives Monday",
    "epoch_ms": "event at 1718000000000 ms",
    "email": "mail alice@example.com about it",
    "xoxb_prose": "Slack bot tokens begin with xoxb- by convention",
    "stripe_prose": "Stripe secret keys begin with sk_live_ in prod",
    "eyj_prose": "base64 JSON starts with eyJ typically",
    "aiza_prose": "Google keys start with AIza",
    "hf_function": "call hf_hub_download(repo_id)",
    "password_min_length": "PASSWORD_MIN_LENGTH=12",
    "aws_key_name_only": "aws_secret_access_key is required",
    "card_last4": "credit card ending in 4242",
    "price": "total $1,234.56 paid",
    "isbn": "ISBN 978-3-16-148410-0 cited",
    "engram_key_prefix": "revoked egm_1a2b3c4d yesterday",
    "engram_key_prose": "Engram keys look like egm_<prefix>_<secret>",
    "marker_already": "token: [REDACTED:jwt] and password=[REDACTED:password_assignment]",
    "unix_path": "the key file is at /etc/ssl/private/server2.key on the host",
    "windows_path": r"saved C:\Users\bob\Documents\taxes2023.xlsx for the accountant",
    "eth_address": "send it to 0x52908400098527886E0F7030069857D2E4169EE7 please",
    "twilio_prose": "Twilio said the outage was fixed at 14:05",
    "heroku_prose": "Heroku app engram-staging-2024 deployed",
    "discord_prose": "join the Discord at discord.gg/engram for help",
    "mailchimp_prose": "Mailchimp campaign us14-spring-sale went out",
    "telegram_time": "meet at 12:30 or 1234567890:30 whatever",
    "session_id": "credentials expired, session id 9f8e7d6c5b4a39281706f5e4d3c2b1a0 closed",
    "camel_identifiers": "the access token refresher is TokenRefreshService2 in app/auth",
    "key_value_words": "api key: see the vault",
    # Code and templates from the development conversations: they name a secret, they do not hold one.
    "code_form_field": "password = request.form['password']",
    "code_call": "hashed_password = generate_password_hash(password, method='sha256')",
    "code_kwarg": "user = User(username=username, password=hashed_password)",
    "code_env": "const apiKey = process.env.OPENWEATHER_API_KEY;",
    "code_environ": "SECRET_KEY = os.environ.get('SECRET_KEY')",
    "code_wtforms": "password = PasswordField('Password', validators=[DataRequired()])",
    "actions_secret": "github_token: ${{ secrets.GITHUB_TOKEN }}",
    "placeholder_quoted": "const apiKey = 'YOUR_API_KEY_HERE';",
    "placeholder_self_named": "return jsonify({'token': 'some_token'})",
    "placeholder_slack": "const web = new WebClient('xoxb-your-slack-token');",
    "html_label": '<label for="password">Password:</label>',
    "markdown_bold": "- **GitHub Token:** check that the token has repo scope",
    "f_string": 'print(f"Hashed password: {new_user.password_hash}")',
    "one_char_filler": 'long_password = "a" * 10000  # a length test',
    "keyboard": "the keyboard shortcut is Ctrl+Shift+K2 in the editor",
    "monkey_hash": "monkey patching in test_auth2.py with a fixture",
}
