"""The held-subjects admin calls' wire types: who is held back now
(GET /v1/admin/held) and a bulk unlock (POST /v1/admin/reset-held)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List

from . import _wire

HELD_SUBJECT: _wire.Schema = {
    "subject": "str",
    "flow": "str",
    "kind": "str",
    "rule": "str",
    "reason": "str",
    "wait_ms": "int",
    "over": "bool",
    "since": "str",
    "expires_in_ms": "int",
}

HELD_LIST: _wire.Schema = {"subjects": [HELD_SUBJECT], "next": "str", "counts": "intmap"}

HELD_RESET: _wire.Schema = {"matched": "int", "reset": "int", "deleted": "int", "dry_run": "bool"}


@dataclass
class HeldSubject:
    """A subject held back now: an account in backoff or an address over a
    limit. subject is the identifier (the normalized account or the
    address), decrypted for this answer alone; wait_ms how long its wait
    still runs (0 when a log over its limit holds it: over); since when it
    was last found held with a longer hold (RFC 3339); expires_in_ms how
    long until the state that holds it is forgotten."""

    subject: str
    flow: str
    kind: str
    rule: str
    reason: str
    wait_ms: int
    over: bool
    since: str
    expires_in_ms: int


@dataclass
class HeldList:
    """A page of held subjects; next is the cursor of the next page ("" on
    the last); counts are the tenant's held subjects by "flow:kind"."""

    subjects: List[HeldSubject]
    next: str = ""
    counts: Dict[str, int] = field(default_factory=dict)


@dataclass
class HeldReset:
    """What reset_held did: the index's entries it selected (matched), the
    subjects it reset (0 on a dry run) and the store keys it deleted."""

    matched: int
    reset: int
    deleted: int
    dry_run: bool

