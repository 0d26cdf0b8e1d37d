"""Writes clients/testdata/webhooks.json (run from the repository root)."""
import base64, hashlib, hmac, json

REF_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
REF_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
REF_TS = 1614265330
REF_BODY = '{"test": 2432232314}'

SECRET = "whsec_" + base64.b64encode(bytes(range(7, 39))).decode()
OTHER = "whsec_" + base64.b64encode(bytes(range(100, 132))).decode()
NOW = 1767225600  # 2026-01-01T00:00:00Z
TS = NOW - 5
ID = "msg_2zJ3dK8m1QwE5rTt9YvXcB"


def key(secret):
    return base64.b64decode(secret[6:] if secret.startswith("whsec_") else secret)


def sign(secret, msg_id, ts, body):
    mac = hmac.new(key(secret), ("%s.%s." % (msg_id, ts)).encode() + body.encode("utf-8"), hashlib.sha256)
    return base64.b64encode(mac.digest()).decode()


def event(type_, subject, ref, details=None, **extra):
    data = {"flow": "login", "rule": "account_backoff", "reason": "account_backoff", "subject": subject}
    if ref is not None:
        data["ref"] = ref
    data["details"] = details if details is not None else {}
    data.update(extra)
    return json.dumps({"type": type_, "timestamp": "2025-12-31T23:59:55Z", "tenant": "default", "data": data},
                      ensure_ascii=False, separators=(",", ":"))


BODY = event("account.under_attack", "alice@example.com", "user-42", {"failures": 120, "window": "15m"})
UTF8 = event("login.new_device", "zoë@exämple.com ✓ 🔑", "ユーザー-7", {"user_agent": "Firefox/146 — Linux"})
NEWDEV = event("login.new_device", "bob@example.com", None)

cases = []


def add(name, want, body=BODY, secret=SECRET, msg_id=ID, ts=TS, sig=None, now=NOW, headers=None, event_want=None, drop=()):
    if sig is None:
        sig = "v1," + sign(secret, msg_id, ts, body)
    h = headers if headers is not None else {"webhook-id": msg_id, "webhook-timestamp": str(ts), "webhook-signature": sig}
    for d in drop:
        h.pop(d)
    c = {"name": name, "secret": secret, "headers": h, "body": body, "now": now, "want": want}
    if want == "ok":
        ev = json.loads(body)
        if event_want is None:
            data = ev.get("data") or {}
            event_want = {"id": h.get("webhook-id") or h.get("Webhook-Id"), "type": ev.get("type") or "", "timestamp": ev.get("timestamp") or "",
                          "tenant": ev.get("tenant") or "",
                          "data": {k: data.get(k) or "" for k in ("flow", "rule", "reason", "subject", "ref")} | {"details": data.get("details") or {}}}
        c["event"] = event_want
    cases.append(c)


good = "v1," + sign(SECRET, ID, TS, BODY)
add("the Standard Webhooks reference vector", "ok", body=REF_BODY, secret=REF_SECRET, msg_id=REF_ID, ts=REF_TS, now=REF_TS,
    sig="v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
add("a tollgate event", "ok")
add("a new device without a ref: ref is empty", "ok", body=NEWDEV)
add("the valid signature among several (secret rotation)", "ok",
    sig="v1," + sign(OTHER, ID, TS, BODY) + " v1a,AAAA v2," + sign(SECRET, ID, TS, BODY) + " " + good)
add("several signatures with extra spaces between them", "ok", sig="  v1," + sign(OTHER, ID, TS, BODY) + "   " + good + "  ")
add("header names in any case", "ok", headers={"Webhook-Id": ID, "WEBHOOK-TIMESTAMP": str(TS), "Webhook-Signature": good})
add("a body with non-ASCII UTF-8 is signed over its UTF-8 bytes", "ok", body=UTF8)
add("the secret without the whsec_ prefix is taken as raw base64", "ok", secret=SECRET[6:])
add("the timestamp exactly 300 s old is inside the tolerance", "ok", ts=NOW - 300)
add("the timestamp exactly 300 s ahead is inside the tolerance", "ok", ts=NOW + 300)

add("the right signature twice", "ok", sig=good + " " + good)
add("a body with JSON white space before and after it", "ok", body=" \r\n\t" + BODY + "\n")
add("an event without a tenant, with null data fields: empty", "ok",
    body='{"type":"store.degraded","timestamp":"2025-12-31T23:59:55Z","data":{"flow":null,"ref":null,"details":null}}')
add("an event with a null data: empty", "ok", body='{"type":"store.recovered","timestamp":"2025-12-31T23:59:55Z","tenant":"default","data":null}')

add("signed with another secret", "signature", sig="v1," + sign(OTHER, ID, TS, BODY))
add("the body tampered with after signing", "signature", sig=good, body=BODY.replace("user-42", "user-43"))
add("the body with one more space than was signed", "signature", sig=good, body=BODY + " ")
add("the id tampered with (a replay under a fresh id)", "signature", sig=good, msg_id=ID + "x")
add("the timestamp tampered with inside the tolerance", "signature", sig=good, ts=TS + 1)
add("only signatures of versions other than v1", "signature",
    sig="v1a," + sign(SECRET, ID, TS, BODY) + " v2," + sign(SECRET, ID, TS, BODY) + " V1," + sign(SECRET, ID, TS, BODY))
add("a signature header without a version", "signature", sig=sign(SECRET, ID, TS, BODY))
add("a signature header that is only v1", "signature", sig="v1")
add("a signature header with an empty v1 signature", "signature", sig="v1,")
add("a signature that is not base64", "signature", sig="v1,!!!not base64!!!")
add("the right signature without base64 padding (compared as sent)", "signature", sig=good.rstrip("="))
add("the right signature truncated", "signature", sig=good[:-8])
add("the right signature with more after a second comma", "signature", sig=good + ",x")
add("the right signature after a tab instead of a space", "signature", sig="v1,AAAA\t" + good)
add("the right signature in hex instead of base64", "signature",
    sig="v1," + hmac.new(key(SECRET), ("%s.%s." % (ID, TS)).encode() + BODY.encode(), hashlib.sha256).hexdigest())

add("the timestamp 301 s old (a replay)", "timestamp", ts=NOW - 301)
add("the timestamp a day old (a replay)", "timestamp", ts=NOW - 86400)
add("the timestamp 301 s in the future", "timestamp", ts=NOW + 301)
add("the old timestamp is refused before the signature is looked at", "timestamp", ts=NOW - 3600, sig="v1,forged")

add("no webhook-id", "headers", drop=("webhook-id",))
add("no webhook-timestamp", "headers", drop=("webhook-timestamp",))
add("no webhook-signature", "headers", drop=("webhook-signature",))
add("no headers at all", "headers", headers={})
add("an empty webhook-id", "headers", headers={"webhook-id": "", "webhook-timestamp": str(TS), "webhook-signature": good})
add("an empty webhook-signature", "headers", headers={"webhook-id": ID, "webhook-timestamp": str(TS), "webhook-signature": ""})
add("a timestamp that is not a number", "headers", headers={"webhook-id": ID, "webhook-timestamp": "yesterday", "webhook-signature": good})
add("a timestamp with a fraction", "headers", headers={"webhook-id": ID, "webhook-timestamp": str(TS) + ".5", "webhook-signature": good})
add("a timestamp with a sign", "headers", headers={"webhook-id": ID, "webhook-timestamp": "+" + str(TS), "webhook-signature": good})
add("a timestamp in milliseconds (out of the tolerance)", "timestamp", headers={"webhook-id": ID, "webhook-timestamp": str(TS * 1000), "webhook-signature": good})
add("a timestamp too long to be a number", "headers", headers={"webhook-id": ID, "webhook-timestamp": "9" * 40, "webhook-signature": good})

add("a secret that is not base64", "secret", secret="whsec_not*base64", sig=good)
add("a secret whose base64 lacks its padding", "secret", secret="whsec_YWJjZA", sig=good)
add("an empty secret", "secret", secret="whsec_", sig=good)
add("a secret with a space after the prefix", "secret", secret="whsec_ " + SECRET[6:], sig=good)
add("a secret with a line break in its base64", "secret", secret=SECRET[:20] + "\n" + SECRET[20:], sig=good)

for name, body in [
    ("a signed body that is not JSON", "not json"),
    ("a signed body that is a JSON array", '[{"type":"login.new_device"}]'),
    ("a signed body that is JSON null", "null"),
    ("a signed body that is two JSON objects", '{"type":"login.new_device"}{"type":"account.reset"}'),
    ("a signed body whose type is not a string", '{"type":7,"timestamp":"2025-12-31T23:59:55Z","tenant":"default","data":{}}'),
    ("a signed body whose data is not an object", '{"type":"login.new_device","timestamp":"2025-12-31T23:59:55Z","tenant":"default","data":"x"}'),
    ("a signed body whose details are not an object", '{"type":"login.new_device","timestamp":"2025-12-31T23:59:55Z","tenant":"default","data":{"details":[1]}}'),
    ("a signed body whose ref is not a string", '{"type":"login.new_device","timestamp":"2025-12-31T23:59:55Z","tenant":"default","data":{"ref":42}}'),
]:
    add(name, "payload", body=body)

doc = {
    "about": (
        "Webhook vectors (Standard Webhooks, v1 = HMAC-SHA256): verifying body (its UTF-8 bytes, exactly) with headers "
        "under secret, at the Unix time now with the default tolerance of 300 s, must give want: \"ok\" with event (id is "
        "the webhook-id header; absent fields as \"\" and details as {}), or the error kind: \"headers\" (webhook-id, "
        "webhook-timestamp or webhook-signature missing or empty, or the timestamp not a decimal integer of at most 18 "
        "digits), \"timestamp\" (more than 300 s from now either way; checked before the signature), \"signature\" (no "
        "v1 signature in the space-separated list equals, as base64 text, base64(HMAC-SHA256(key, id + \".\" + "
        "timestamp + \".\" + body)); other versions and malformed entries are skipped), \"secret\" (the secret, less an "
        "optional whsec_ prefix, is empty or not standard padded base64; a secret without the prefix is taken as the "
        "raw base64 key) or \"payload\" (correctly signed, but not a JSON object whose type, timestamp and tenant are "
        "strings, data an object of strings flow, rule, reason, subject and ref and an object details; each may be "
        "absent or null). Header names are matched in any case."
    ),
    "tolerance_seconds": 300,
    "cases": cases,
}
with open("clients/testdata/webhooks.json", "w", encoding="utf-8") as f:
    json.dump(doc, f, ensure_ascii=False, indent=1)
    f.write("\n")
print(len(cases))
