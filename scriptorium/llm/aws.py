"""What every route to Amazon Bedrock shares (Claude through the Messages API, any model through
Converse): the variables of the AWS credential chain that hold secrets the requests are signed
with, so every message, result and record is scrubbed of their values as of a key."""

from __future__ import annotations

__all__ = ["AWS_SECRET_ENV"]

#: The variables of the AWS chain that hold secrets the SDK signs Bedrock requests with.
AWS_SECRET_ENV = (
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
)
