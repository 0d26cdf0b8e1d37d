"""JSON as the Go client writes and reads it.

Requests are encoded as Go's encoding/json encodes api/wire's structs: keys
in the structs' order, empty optional fields left out, no white space, and
strings escaped as Go escapes them (``<``, ``>``, ``&``, U+2028 and U+2029
as ``\\u`` escapes, unpaired surrogates as U+FFFD). Answers are decoded as
Go decodes them into those structs: keys matched exactly or else without
regard to case, unknown keys ignored, null leaving a field as it was, and a
value of the wrong type (a fraction for an integer, a number for a string)
making the whole answer unusable.

This module is private: its names may change without notice.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

__all__ = ["encode", "decode", "parse", "WireError", "Schema"]

_HEX = "0123456789abcdef"
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1

# A schema maps a field's JSON name to its kind: "str", "int", "bool",
# "strs" (a list of strings), "intmap" (an object of ints by any key, Go's
# map[string]int), or a nested schema (an object), or a one-element list
# holding a nested schema (a list of objects).
Schema = Mapping[str, Any]


class WireError(ValueError):
    """The answer is not the JSON the call expects. It never quotes it."""


def _escape(s: str) -> str:
    out = ['"']
    for ch in s:
        o = ord(ch)
        if o < 0x80:
            if ch == '"' or ch == "\\":
                out.append("\\" + ch)
            elif o >= 0x20 and ch not in "<>&":
                out.append(ch)
            elif ch == "\b":
                out.append("\\b")
            elif ch == "\f":
                out.append("\\f")
            elif ch == "\n":
                out.append("\\n")
            elif ch == "\r":
                out.append("\\r")
            elif ch == "\t":
                out.append("\\t")
            else:
                out.append("\\u00" + _HEX[o >> 4] + _HEX[o & 0xF])
        elif 0xD800 <= o <= 0xDFFF:
            out.append("\\ufffd")  # not encodable: Go's replacement
        elif o == 0x2028 or o == 0x2029:
            out.append("\\u202" + _HEX[o & 0xF])
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


Scalar = Union[str, int, bool]


def encode(fields: Sequence[Tuple[str, Scalar]]) -> bytes:
    """The JSON object of fields, in order, as Go's json.Marshal writes it."""
    parts = []
    for name, value in fields:
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, int):
            text = str(value)
        elif isinstance(value, str):
            text = _escape(value)
        elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            text = "[" + ",".join(_escape(v) for v in value) + "]"  # reset_held's subjects
        else:  # pragma: no cover - callers pass scalars only
            raise TypeError("unsupported JSON value")
        parts.append(_escape(name) + ":" + text)
    return ("{" + ",".join(parts) + "}").encode("utf-8")


class _Float(float):
    """A JSON number with a fraction or an exponent."""


def _no_constant(name: str) -> Any:
    raise ValueError("not JSON")


def parse(body: bytes) -> Any:
    """Parse body as JSON (UTF-8, one value), objects as lists of pairs.

    Raises WireError without quoting the body.
    """
    try:
        text = body.decode("utf-8", errors="replace")
        return json.loads(
            text,
            object_pairs_hook=_Pairs,
            parse_float=_Float,
            parse_constant=_no_constant,
        )
    except (ValueError, RecursionError):
        raise WireError("not JSON") from None


class _Pairs(list):  # type: ignore[type-arg]
    """A JSON object: its members in order, duplicates kept."""


def _fold(s: str) -> str:
    return "".join(c.lower().upper() for c in s)


def _zero(kind: Any) -> Any:
    if kind == "str":
        return ""
    if kind == "int":
        return 0
    if kind == "bool":
        return False
    if kind == "strs":
        return []
    if kind == "intmap":
        return {}
    if isinstance(kind, list):
        return []
    return decode(_Pairs(), kind)


def _value(kind: Any, v: Any) -> Any:
    if kind == "str":
        if isinstance(v, str):
            return v
    elif kind == "int":
        if isinstance(v, int) and not isinstance(v, bool) and _INT64_MIN <= v <= _INT64_MAX:
            return v
    elif kind == "bool":
        if isinstance(v, bool):
            return v
    elif kind == "strs":
        if isinstance(v, list) and not isinstance(v, _Pairs):
            out: List[str] = []
            for item in v:
                if item is None:
                    out.append("")
                elif isinstance(item, str):
                    out.append(item)
                else:
                    raise WireError("wrong type")
            return out
    elif kind == "intmap":
        if isinstance(v, _Pairs):
            # As Go fills a map: keys as sent (no folding), a null value
            # is 0, the last of a repeated key wins.
            counts: Dict[str, int] = {}
            for k, item in v:
                counts[k] = 0 if item is None else _value("int", item)
            return counts
    elif isinstance(kind, list):
        if isinstance(v, list) and not isinstance(v, _Pairs):
            items: List[Dict[str, Any]] = []
            for item in v:
                items.append(_zero(kind[0]) if item is None else decode(item, kind[0]))
            return items
    else:
        return decode(v, kind)
    raise WireError("wrong type")


def decode(obj: Any, schema: Schema) -> Dict[str, Any]:
    """Decode a parsed JSON object by schema, as Go decodes into a struct.

    Every field of schema is in the result, its zero value when absent or
    null. A top-level null decodes to all zero values, as in Go. Raises
    WireError when obj is not an object or a member has the wrong type.
    """
    out: Dict[str, Any] = {name: _zero(kind) for name, kind in schema.items()}
    if obj is None:
        return out
    if not isinstance(obj, _Pairs):
        raise WireError("wrong type")
    folded = {_fold(name): name for name in schema}
    for key, v in obj:
        name: Optional[str] = key if key in schema else folded.get(_fold(key))
        if name is None or v is None:
            continue
        out[name] = _value(schema[name], v)
    return out


VERDICT: Schema = {
    "action": "str",
    "delay_ms": "int",
    "retry_after": "int",
    "reasons": "strs",
    "attempt": "str",
    "device_token": "str",
}

PROBLEM: Schema = {
    "type": "str",
    "title": "str",
    "status": "int",
    "detail": "str",
    "field": "str",
    "request_id": "str",
}

ENTRY: Schema = {
    "id": "str",
    "kind": "str",
    "flow": "str",
    "subject": "str",
    "family": "str",
    "length": "int",
    "country": "str",
    "reason": "str",
    "by": "str",
    "created_at": "str",
    "expires_at": "str",
}

RULE_STATE: Schema = {
    "rule": "str",
    "reason": "str",
    "subject": "str",
    "algorithm": "str",
    "facet": "str",
    "count": "int",
    "remaining": "int",
    "wait_ms": "int",
    "over": "bool",
    "reset_ms": "int",
}

EXPLANATION: Schema = {
    "flow": "str",
    "verdict": VERDICT,
    "rules": [RULE_STATE],
    "entries": [ENTRY],
}

ENTRIES: Schema = {"entries": [ENTRY]}
RESET_RESULT: Schema = {"deleted": "int"}
REMOVED: Schema = {"removed": "bool"}
RELOAD_RESULT: Schema = {"flows": "strs", "restart_needed": "strs"}
DEAD_LETTER: Schema = {
    "id": "str",
    "type": "str",
    "tenant": "str",
    "endpoint": "str",
    "last_error": "str",
    "attempts": "int",
    "time": "str",
    "dead_at": "str",
}
DEAD_LETTERS: Schema = {"dead_letters": [DEAD_LETTER]}
REPLAYED: Schema = {"replayed": "bool"}
CHALLENGE: Schema = {
    "token": "str",
    "kind": "str",
    "difficulty": "int",
    "expires_at": "str",
    "solver_url": "str",
    "site_key": "str",
}
CHALLENGE_VERIFIED: Schema = {"solved": "bool", "reason": "str"}
