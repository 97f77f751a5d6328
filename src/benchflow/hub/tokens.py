"""Per-user API tokens: made once, shown once, stored as their SHA-256.

A token is 32 random bytes (``bfh_`` + URL-safe base64), so a plain SHA-256
is enough to store it: there is nothing to brute-force. Clients send it as
``Authorization: Bearer <token>`` and read it from ``$BENCHFLOW_HUB_TOKEN``.
"""

from __future__ import annotations

import hashlib
import secrets

from sqlalchemy import Engine, insert, select

from . import models
from .timeutil import now

PREFIX = "bfh_"


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def create_token(engine: Engine, user: str) -> str:
    """A new token for ``user`` (the user is created on first use); only its hash is stored."""
    token = PREFIX + secrets.token_urlsafe(32)
    with engine.begin() as conn:
        user_id = conn.execute(select(models.users.c.id).where(models.users.c.name == user)).scalar()
        if user_id is None:
            user_id = conn.execute(insert(models.users).values(name=user, created_at=now())).inserted_primary_key[0]
        conn.execute(insert(models.tokens).values(user_id=user_id, token_sha256=hash_token(token), created_at=now()))
    return token


def user_for(engine: Engine, token: str | None) -> tuple[int, str] | None:
    """(user id, name) of a valid token, else None."""
    if not token:
        return None
    query = (select(models.users.c.id, models.users.c.name)
             .join(models.tokens, models.tokens.c.user_id == models.users.c.id)
             .where(models.tokens.c.token_sha256 == hash_token(token)))
    with engine.connect() as conn:
        row = conn.execute(query).first()
    return (row.id, row.name) if row else None
