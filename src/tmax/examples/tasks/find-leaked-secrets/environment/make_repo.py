"""Builds the fixture repository /app/repo for find-leaked-secrets (fixed content).

Credential-looking strings are assembled from pieces so that this generator file itself
does not contain them verbatim.
"""
import base64
import os
import random
import sys

root = sys.argv[1]
rng = random.Random(7)

AWS1 = "AK" + "IA" + "ZYMLOPIFQY78F5M0"
AWS2 = "AK" + "IA" + "NXYNJ3LVF7F4UZCR"
AWS3 = "AK" + "IA" + "9A1NX8F37M3DWINK"
AWS_DOC = "AK" + "IA" + "IOSFODNN7EXAMPLE"
GH1 = "gh" + "p_" + "VYCM7l8GQlchbkER0Af7BOfjtNayviHzm5Yd"
GH2 = "gh" + "p_" + "OnCqIz0Wiw8SE7diV3TMXVjM8AhghjsllAj7"
SLACK = "xo" + "xb-" + "450301680449-9782222713750-Zo2qh20xlReGsaL1dvnyzv0Z"
BEGIN = "-----BEGIN "
END = "-----END "
PK = "PRIVATE KEY-----"


def b64lines(n):
    raw = bytes(rng.randrange(256) for _ in range(48 * n))
    s = base64.b64encode(raw).decode()
    return [s[i:i + 64] for i in range(0, len(s), 64)]


def key_block(kind, indent=""):
    kind = kind + " " if kind else ""
    lines = [BEGIN + kind + PK] + b64lines(6) + [END + kind + PK]
    return "\n".join(indent + l for l in lines)


files = {
    "README.md": """# orders-service

Small service that syncs orders to S3 and posts to Slack.

## Local setup

Export credentials in your shell, never commit them:

    export AWS_ACCESS_KEY_ID=%s
    export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY

GitHub tokens look like `ghp_` followed by 36 characters.
Slack bot tokens start with `xoxb-`.
""" % AWS_DOC,
    "src/app/__init__.py": "",
    "src/app/settings.py": """import os

DEBUG = os.environ.get("DEBUG", "0") == "1"
BUCKET = os.environ.get("BUCKET", "orders-archive")
REGION = "eu-central-1"

# TODO: move to the secret store before release
SLACK_CHANNEL = "#orders"
GITHUB_API = "https://api.github.com"


GITHUB_TOKEN = "%s"

TIMEOUT_S = 30
""" % GH1,
    "src/app/storage.py": """import os

import boto3  # noqa


def client():
    # keys always start with AKIA; fall back to the service account for now
    key = os.environ.get("AWS_ACCESS_KEY_ID", "%s")
    secret = os.environ["AWS_SECRET_ACCESS_KEY"]
    return boto3.client("s3", aws_access_key_id=key, aws_secret_access_key=secret)
""" % AWS1,
    "src/app/util.py": """def chunks(seq, n):
    for i in range(0, len(seq), n):
        yield seq[i:i + n]


def mask(token):
    # AKIA... keys and ghp_... tokens are masked in logs
    return token[:4] + "*" * (len(token) - 4)
""",
    "config/dev.yaml": """env: dev
aws:
  access_key_id: %s
  region: eu-central-1
slack:
  token: xoxb-your-token-here
""" % AWS_DOC,
    "config/prod.yaml": """env: prod
aws:
  region: eu-central-1
slack:
  channel: "#orders"
  token: %s
tls:
  cert_file: /etc/ssl/orders.pem
  key: |
%s
retries: 5
""" % (SLACK, key_block("EC", "    ")),
    "deploy/.env.production": """BUCKET=orders-archive
AWS_ACCESS_KEY_ID=%s
AWS_DEFAULT_REGION=eu-central-1
SLACK_TOKEN=%s
LOG_LEVEL=info
""" % (AWS2, SLACK),
    "deploy/.env.example": """BUCKET=
AWS_ACCESS_KEY_ID=
SLACK_TOKEN=
LOG_LEVEL=info
""",
    "deploy/keys/id_ed25519": key_block("OPENSSH") + "\n",
    "deploy/keys/id_ed25519.pub": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIH1x0Fq9o2u8Kx3pQ1pJmGkS0cWl7c2y2Zz7zFq3a9vV deploy@ci\n",
    "deploy/certs/server.pem": BEGIN + "CERTIFICATE-----\n" + "\n".join(b64lines(8)) + "\n" + END + "CERTIFICATE-----\n",
    "deploy/certs/server.key": key_block("") + "\n",
    "deploy/deploy.sh": """#!/bin/sh
set -e
: "${AWS_ACCESS_KEY_ID:?set AWS_ACCESS_KEY_ID}"
aws s3 sync build/ "s3://$BUCKET/"
""",
    "notes/old config.txt": """notes from the 2022 migration
- CI used a personal token for a while: %s
- rotated? ask Dana
""" % GH2,
    "notes/keys.md": """Public key for verifying release signatures:

%sPUBLIC KEY-----
%s
%sPUBLIC KEY-----
""" % (BEGIN, "\n".join(b64lines(3)), END),
    ".github/workflows/ci.yml": """name: ci
on: [push]
jobs:
  test:
    runs-on: ubuntu-latest
    env:
      AWS_ACCESS_KEY_ID: %s
      AWS_REGION: eu-central-1
    steps:
      - uses: actions/checkout@v4
      - run: make test
""" % AWS3,
    "tests/test_util.py": """from app.util import mask


def test_mask_short_key():
    # not a real key: too short
    assert mask("%s").startswith("AKIA")


def test_mask_token():
    assert mask("%s").endswith("*")
""" % ("AK" + "IA" + "1234567890ABCDE", "gh" + "p_" + "abc123"),
    "tests/fixtures/sample_order.json": '{"id": 17, "customer": "c-88", "lines": [{"sku": "AKIA-MUG", "qty": 2}]}\n',
}

for rel, text in files.items():
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)

os.makedirs(os.path.join(root, "assets"), exist_ok=True)
with open(os.path.join(root, "assets/logo.png"), "wb") as f:
    f.write(b"\x89PNG\r\n\x1a\n" + bytes(rng.randrange(256) for _ in range(2048)))

os.chmod(os.path.join(root, "deploy/deploy.sh"), 0o755)
os.chmod(os.path.join(root, "deploy/keys/id_ed25519"), 0o600)
os.chmod(os.path.join(root, "deploy/certs/server.key"), 0o600)
