"""FAIL_OPEN's local allowance (api/client/allowance.go).

While tollgate gives no verdict, FAIL_OPEN proceeds only within a small
allowance per account (a send's destination) and per client address, per
flow; past it the call is answered as FAIL_DELAY would, with the reasons
``client_fallback`` and ``client_fallback_allowance``. By default each
account gets 5 fallback proceeds and each address (an IPv4 address, an
IPv6 /64) 50, coming back evenly over 30 minutes: a credential-stuffing
run during an outage gets 7 guesses per account in the first 15 minutes and
15 in an hour, however many addresses it uses.

Each subject has a bucket kept as one instant (GCRA): when it will be full
again. Subjects are kept as 128-bit HMAC-SHA-256 digests under a random key
made for each Client, never as identifiers, in two tables (accounts with
destinations, and addresses) of at most ``fail_open_subjects`` each. A
subject whose allowance has refilled is dropped; when a table is full, a new
subject takes the place of the one closest to a full allowance (counted in
:attr:`Stats.evicted`). Checks and sends are counted; reports never are.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import threading
from dataclasses import dataclass
from typing import Dict, List, Optional

from . import _netip
from ._fold import fold_account

__all__ = [
    "Stats",
    "DEFAULT_FAIL_OPEN_PER_ACCOUNT",
    "DEFAULT_FAIL_OPEN_PER_ADDRESS",
    "DEFAULT_FAIL_OPEN_WINDOW",
    "DEFAULT_FAIL_OPEN_SUBJECTS",
]

#: Fallback proceeds per account (and per send destination) at once.
DEFAULT_FAIL_OPEN_PER_ACCOUNT = 5
#: Fallback proceeds per address (IPv4, or IPv6 /64) at once.
DEFAULT_FAIL_OPEN_PER_ADDRESS = 50
#: Seconds a spent allowance takes to come back whole.
DEFAULT_FAIL_OPEN_WINDOW = 1800.0
#: How many accounts, and separately addresses, the allowance tracks.
DEFAULT_FAIL_OPEN_SUBJECTS = 10_000

_KIND_ACCOUNT = b"a"
_KIND_DESTINATION = b"d"
_KIND_ADDRESS = b"i"

_DEFAULT_SEND_FLOW = "otp_send"


@dataclass(frozen=True)
class Stats:
    """What FAIL_OPEN answered while tollgate gave no verdict, since the
    Client was made. Export these; alert on the refusals, which mean an
    outage is being used.

    Attributes:
        fail_open_proceeds: FAIL_OPEN checks and sends that proceeded.
        fail_open_refused_account: those delayed because their account (a
            send's destination) had spent its allowance.
        fail_open_refused_address: those delayed because their address had
            (and their account had not).
        tracked_accounts: accounts and destinations held now.
        tracked_addresses: addresses held now.
        evicted: subjects dropped from a full table before they refilled.
    """

    fail_open_proceeds: int = 0
    fail_open_refused_account: int = 0
    fail_open_refused_address: int = 0
    tracked_accounts: int = 0
    tracked_addresses: int = 0
    evicted: int = 0


@dataclass(frozen=True)
class Subject:
    """What one call is counted on; it lives for the call only."""

    kind: bytes
    flow: str
    account: str  # folded; "" is not counted
    ip: str  # "" is not counted
    captcha_solved: bool = False


def _digits(s: str) -> str:
    return "".join(c for c in s if "0" <= c <= "9")


def check_subject(flow: str, account: str, ip: str, captcha_solved: bool) -> Subject:
    """A check's subject: its flow's account, folded as tollgate folds it
    (so " ALICE ", "ａｌｉｃｅ" and "al\\u200dice" are one), and address."""
    return Subject(_KIND_ACCOUNT, flow, fold_account(account), ip, captcha_solved)


def send_subject(flow: str, destination: str, channel: str, ip: str, captcha_solved: bool) -> Subject:
    """A send's subject: its flow's destination (an e-mail address folded,
    a phone number by its digits, whatever the channel) and address."""
    if channel == "email" or "@" in destination:
        dst = "e:" + fold_account(destination)
    else:
        dst = "p:" + _digits(destination)
    return Subject(_KIND_DESTINATION, flow or _DEFAULT_SEND_FLOW, dst, ip, captcha_solved)


def address_key(ip: str) -> str:
    """The form of an address that is hashed: IPv4 (mapped too) whole, an
    IPv6 address by its /64, anything else as it is."""
    a = _netip.parse_addr(ip)
    if a is None:
        return "?" + ip
    a = a.without_zone().unmap()
    if a.is4:
        return str(a)
    return str(_netip.Prefix(a, 64).masked())


class _Bucket:
    __slots__ = ("key", "tat", "pos")

    def __init__(self, key: bytes, tat: int) -> None:
        self.key = key
        self.tat = tat  # when the bucket is full again, in nanoseconds
        self.pos = 0  # its index in the heap


class _Buckets:
    """One kind's table: at most max buckets, in a min-heap by tat (the
    same heap as Go's container/heap, so ties evict alike)."""

    def __init__(self, every: int, slack: int, max_subjects: int) -> None:
        self.every = every
        self.slack = slack
        self.max = max_subjects
        self.by_key: Dict[bytes, _Bucket] = {}
        self.heap: List[_Bucket] = []

    def has(self, b: _Bucket, t: int) -> bool:
        return b.tat - self.slack <= t

    def prune(self, t: int) -> None:
        while self.heap and self.heap[0].tat <= t:
            b = self._pop()
            del self.by_key[b.key]

    def spend(self, b: Optional[_Bucket], key: bytes, t: int) -> int:
        if b is not None:
            b.tat = max(b.tat, t) + self.every
            self._fix(b.pos)
            return 0
        evicted = 0
        if len(self.heap) >= self.max:
            b = self._pop()
            del self.by_key[b.key]
            evicted = 1
        b = _Bucket(key, t + self.every)
        self.by_key[key] = b
        b.pos = len(self.heap)
        self.heap.append(b)
        self._up(b.pos)
        return evicted

    # Go's container/heap.
    def _swap(self, i: int, j: int) -> None:
        h = self.heap
        h[i], h[j] = h[j], h[i]
        h[i].pos, h[j].pos = i, j

    def _up(self, j: int) -> None:
        h = self.heap
        while j > 0:
            i = (j - 1) // 2
            if not h[j].tat < h[i].tat:
                break
            self._swap(i, j)
            j = i

    def _down(self, i0: int, n: int) -> bool:
        h = self.heap
        i = i0
        while True:
            j1 = 2 * i + 1
            if j1 >= n:
                break
            j = j1
            j2 = j1 + 1
            if j2 < n and h[j2].tat < h[j1].tat:
                j = j2
            if not h[j].tat < h[i].tat:
                break
            self._swap(i, j)
            i = j
        return i > i0

    def _pop(self) -> _Bucket:
        n = len(self.heap) - 1
        self._swap(0, n)
        self._down(0, n)
        return self.heap.pop()

    def _fix(self, i: int) -> None:
        if not self._down(i, len(self.heap)):
            self._up(i)


class Allowance:
    """FAIL_OPEN's limit: a table of accounts (and destinations) and one of
    addresses, keyed by HMACs under a key made for this allowance."""

    def __init__(self, per_account: Optional[int], per_address: Optional[int], window: float, subjects: int) -> None:
        if window is None or not window > 0:
            raise ValueError("fail_open_window must be positive")
        if isinstance(subjects, bool) or not isinstance(subjects, int) or subjects < 1:
            raise ValueError("fail_open_subjects must be a positive integer")
        window_ns = int(round(window * 1e9))
        self._lock = threading.Lock()
        self._proceeds = self._refused_account = self._refused_address = self._evicted = 0
        tables: List[Optional[_Buckets]] = []
        for name, n in (("fail_open_per_account", per_account), ("fail_open_per_address", per_address)):
            if n is None or (isinstance(n, int) and not isinstance(n, bool) and n < 0):
                tables.append(None)  # turned off
                continue
            if isinstance(n, bool) or not isinstance(n, int) or n == 0:
                raise ValueError(name + " must be a positive integer, or negative or None to turn it off")
            every = window_ns // n
            if every <= 0:
                raise ValueError("fail_open_window is too short for its allowance")
            tables.append(_Buckets(every, window_ns - every, subjects))
        self._accounts, self._addresses = tables
        self._mac: Optional["hmac.HMAC"] = None
        if self._accounts is not None or self._addresses is not None:
            self._mac = hmac.new(os.urandom(32), digestmod=hashlib.sha256)

    def _key(self, kind: bytes, flow: str, value: str) -> bytes:
        assert self._mac is not None
        m = self._mac.copy()
        m.update(kind)
        m.update(flow.encode("utf-8", "surrogatepass"))
        m.update(b"\x00")
        m.update(value.encode("utf-8", "surrogatepass"))
        return m.digest()[:16]

    def take(self, now_ns: int, s: Subject) -> bool:
        """Spend one fallback proceed of s's account and address at now_ns,
        and say whether both had one left; when either had not, neither is
        spent, so a spraying address does not spend its victims' allowance
        and a hammered account does not spend its guessers' addresses'."""
        with self._lock:
            if self._accounts is None and self._addresses is None:
                self._proceeds += 1
                return True
            t = now_ns
            acct = addr = None
            acct_key = addr_key = b""
            accounts, addresses = self._accounts, self._addresses
            if accounts is not None and s.account:
                accounts.prune(t)
                acct_key = self._key(s.kind, s.flow, s.account)
                acct = accounts.by_key.get(acct_key)
                if acct is not None and not accounts.has(acct, t):
                    self._refused_account += 1
                    return False
            if addresses is not None and s.ip:
                addresses.prune(t)
                addr_key = self._key(_KIND_ADDRESS, s.flow, address_key(s.ip))
                addr = addresses.by_key.get(addr_key)
                if addr is not None and not addresses.has(addr, t):
                    self._refused_address += 1
                    return False
            if accounts is not None and s.account:
                self._evicted += accounts.spend(acct, acct_key, t)
            if addresses is not None and s.ip:
                self._evicted += addresses.spend(addr, addr_key, t)
            self._proceeds += 1
            return True

    def stats(self) -> Stats:
        """The counts so far."""
        with self._lock:
            return Stats(
                fail_open_proceeds=self._proceeds,
                fail_open_refused_account=self._refused_account,
                fail_open_refused_address=self._refused_address,
                tracked_accounts=len(self._accounts.by_key) if self._accounts is not None else 0,
                tracked_addresses=len(self._addresses.by_key) if self._addresses is not None else 0,
                evicted=self._evicted,
            )
