"""PII masking: e-mail addresses, phone numbers, IPv4 and IPv6 addresses are replaced in `text`.

Replacement strings default to Dolma's markers (`|||EMAIL_ADDRESS|||`, `|||PHONE_NUMBER|||`,
`|||IP_ADDRESS|||`), which OLMo's tokenizers know as special tokens; datatrove's PIIFormatter
instead substitutes fake addresses (email@example.com, random IPs): set the replacements to taste.
Counts per document are stored; nothing is rejected.

What is masked and what is not (false positives cost text, so each pattern is validated):
  * e-mail: datatrove's RFC-5322-like pattern (local part @ dotted domain, or @[IPv4]), applied
    per whitespace-free token that has an `@` (linear time; see `_mask_emails`).
  * IPv4 and IPv6: parsed with `ipaddress`; by default only *global* addresses are masked
    (datatrove's `only_remove_public_ips=True`): 127.0.0.1, 192.168.x.x, 10.x, 2001:db8:: and
    other private, loopback, documentation or reserved addresses identify nobody. A dotted quad
    that reads as a version number is kept: `v1.2.3.4`, `version 1.2.3.4`, or one that is part of
    a longer dotted run (`1.2.3.4.5`). Times (12:30:45) and MAC addresses are not valid IPv6.
  * phone: international numbers written with `+` (+44 20 7946 0958, (+44) 20 7946 0958, +1-212-555-0100), North
    American numbers with separators ((212) 555-0100, 212-555-0100, 212.555.0100) and national
    numbers with a trunk `0` (030 1234567, 020 7946 0958, 01 23 45 67 89): 8 to 15
    digits with `+`, 9 to 15 without (a dd.mm.yyyy date has 8), not glued to a date, a time or a
    run of space-separated numbers ("997 998 999 1000"). A bare digit run is a phone only when it is
    a 10-11 digit national number with a trunk 0 (07700900123); other bare runs (order numbers,
    timestamps) are kept, as are years, dates and prices; like Dolma, a candidate preceded by
    `isbn`, `doi` or `#` is kept.
"""
from __future__ import annotations

import ipaddress
import re
from typing import Callable

import pyarrow as pa
from pydantic import Field

from stages._arrow import set_column
from stages.base import Stage, StageConfig

# datatrove's e-mail pattern (PIIFormatter), a practical subset of RFC 5322.
EMAIL = re.compile(
    r"\b[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:(?:[A-Za-z0-9](?:["
    r"A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?|\[(?:(?:25[0-5]|2[0-4][0-9]|["
    r"01]?[0-9][0-9]?)\.){3}(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?|[A-Za-z0-9-]*[A-Za-z0-9]:)])"
)
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
# Each pattern starts with a lookahead on its first character: Python's re then skips ahead fast.
IPV4 = re.compile(rf"(?=\d)(?<![\w.])(?:{_OCTET}\.){{3}}{_OCTET}(?![\w]|\.\d)")
# Candidates only; `ipaddress` decides. Optional embedded IPv4 tail (::ffff:1.2.3.4).
IPV6 = re.compile(
    r"(?=[0-9A-Fa-f:])(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{1,4}|(?:\d{1,3}\.){3}\d{1,3})?(?![\w:])"
)
_SEP = r"[ \u00a0.\-/]"
PHONE = re.compile(
    r"(?=[+(0-9])(?<![\w+#])(?:"
    # international: +CC or (+CC) then groups of digits, optional (0) or (area). After a number and a space
    # too ("E.164 +14155552671", "Tel. 2 +44 20 7946 0958"): the `+` already says what follows.
    rf"(?<!\d[/.\-:])(?:\+\d{{1,3}}|\(\+\d{{1,3}}\))(?:{_SEP}?\(\d{{1,4}}\))?(?:{_SEP}?\d{{1,5}}){{2,6}}"
    # the rest not right after a number and a separator: "997 998 999 1000" is a run of numbers
    r"|(?<!\d[/.\-: ])(?:"
    # North American, optional country code 1: (212) 555-0100, (283)-182-3829, 212-555-0100,
    # 212.555.0100, 212 555 0100, 1-800-273-8255, 1 (800) 273-8255. Area code [2-9]xx; any exchange
    # (fictional and unassigned numbers are written the same way and are just as personal).
    rf"(?:1[ \-.]?)?(?:\([2-9]\d{{2}}\)[ \-.]?|[2-9]\d{{2}}[ \-.])\d{{3}}[ \-.]\d{{4}}"
    # a bare run of 10-11 digits: judged by `_valid_phone`
    r"|\d{10,11}"
    # national with trunk prefix 0: 030 1234567, 020 7946 0958, 01 23 45 67 89, (030) 1234567
    rf"|(?:\(0\d{{1,4}}\)|0\d{{1,4}}){_SEP}?\d{{2,8}}(?:{_SEP}\d{{2,4}}){{0,4}}"
    r"))(?![\w]|[.,/\-: ]\d)"
)
_VERSION_BEFORE = re.compile(r"\b(?:v|version|ver\.?|release|build)\s*$", re.IGNORECASE)
_PHONE_CONTEXT = re.compile(r"(?:isbn|doi|#)[\s:]*$", re.IGNORECASE)
# A bare digit run after one of these words is an identifier, not a phone number.
_BARE_CONTEXT = re.compile(
    r"\b(?:isbn(?:-1[03])?|issn|doi|pmid|arxiv|order|invoice|ref|reference|account|acct|tracking|serial|sku|"
    r"patent|id|ids|item|ticket|transaction|barcode|ean|upc)\b\W{0,3}$|#\s*$",
    re.IGNORECASE,
)


class PIIConfig(StageConfig):
    mask_emails: bool = Field(True, description="replace e-mail addresses")
    mask_phones: bool = Field(True, description="replace phone numbers")
    mask_ips: bool = Field(True, description="replace IP addresses")
    only_public_ips: bool = Field(
        True, description="mask only public IPs (datatrove's default: private/reserved addresses identify no one)")
    email_replacement: str = Field("|||EMAIL_ADDRESS|||", description="text put in place of an e-mail address")
    phone_replacement: str = Field("|||PHONE_NUMBER|||", description="text put in place of a phone number")
    ip_replacement: str = Field("|||IP_ADDRESS|||", description="text put in place of an IP address")


class PIIMasker(Stage):
    name = "pii"
    Config = PIIConfig
    reasons = ()
    decision_keys = ()
    rewrite_signals = ("pii_email_count", "pii_phone_count", "pii_ip_count")

    config: PIIConfig

    def signal_fields(self) -> list[pa.Field]:
        return [
            pa.field("pii_email_count", pa.int32()),
            pa.field("pii_phone_count", pa.int32()),
            pa.field("pii_ip_count", pa.int32()),
        ]

    def signal_descriptions(self) -> dict[str, str]:
        return {"pii_email_count": "e-mail addresses masked", "pii_phone_count": "phone numbers masked",
                "pii_ip_count": "IP addresses masked"}

    def mask(self, text: str) -> tuple[str, int, int, int]:
        """Masked text and the number of e-mails, phones and IP addresses replaced."""
        c = self.config
        n_email = n_phone = n_ip = 0
        if c.mask_emails and "@" in text:
            text, n_email = _mask_emails(text, c.email_replacement)
        if c.mask_ips:
            if ":" in text:
                text, n6 = _sub_valid(IPV6, text, c.ip_replacement, self._valid_ipv6)
                n_ip += n6
            if "." in text:
                text, n4 = _sub_valid(IPV4, text, c.ip_replacement, self._valid_ipv4)
                n_ip += n4
        if c.mask_phones:
            text, n_phone = _sub_valid(PHONE, text, c.phone_replacement, _valid_phone)
        return text, n_email, n_phone, n_ip

    def _valid_ipv4(self, m: re.Match) -> bool:
        if _VERSION_BEFORE.search(m.string, max(0, m.start() - 12), m.start()):
            return False
        return self._public_or_any(m.group(0))

    def _valid_ipv6(self, m: re.Match) -> bool:
        s = m.group(0)
        if s.count(":") < 2 or not any(ch.isdigit() or ch in "abcdefABCDEF" for ch in s):
            return False
        return self._public_or_any(s)

    def _public_or_any(self, s: str) -> bool:
        try:
            ip = ipaddress.ip_address(s)
        except ValueError:
            return False
        return ip.is_global or not self.config.only_public_ips

    def annotate(self, batch: pa.Table) -> pa.Table:
        texts = batch.column("text").to_pylist()
        sources = batch.column("source").to_pylist()
        kinds = batch.column("kind").to_pylist()
        n = batch.num_rows
        counts: list[list[int | None]] = [[None] * n, [None] * n, [None] * n]
        out = list(texts)
        for i, text in enumerate(texts):
            if not self.applies_to(sources[i], kinds[i]):
                continue
            if not text:
                counts[0][i] = counts[1][i] = counts[2][i] = 0
                continue
            out[i], counts[0][i], counts[1][i], counts[2][i] = self.mask(text)
        batch = set_column(batch, "text", pa.array(out, pa.string()))
        for field, col in zip(self.signal_fields(), counts):
            batch = set_column(batch, field.name, pa.array(col, field.type))
        return batch

    def decide(self, batch: pa.Table) -> list[str | None]:
        return [None] * batch.num_rows


def _valid_phone(m: re.Match) -> bool:
    s = m.group(0)
    digits = sum(ch.isdigit() for ch in s)
    # `+` numbers are unambiguous from 8 digits; without `+`, 9 (dd.mm.yyyy dates have 8).
    if not (8 if s[0] == "+" or s.startswith("(+") else 9) <= digits <= 15:
        return False
    if s.isdigit():
        if not _bare_phone(s):
            return False
        return not _BARE_CONTEXT.search(m.string, max(0, m.start() - 24), m.start())
    return not _PHONE_CONTEXT.search(m.string, max(0, m.start() - 8), m.start())


def _bare_phone(s: str) -> bool:
    """A run of digits without separators that has the shape of a phone number.

    National with trunk 0 (07700900123, 10-11 digits, not 00...); North American 10 digits with an
    area code 2-9xx (2831823829), or 11 with the country code 1. Runs starting 1 that are not 1 +
    NANP (1234567890, Unix timestamps 1.0e9-2.0e9) are kept.
    """
    if s[0] == "0":
        return 10 <= len(s) <= 11 and s[1] != "0"
    if len(s) == 10:
        return s[0] in "23456789"
    return s[0] == "1" and s[1] in "23456789"


_TOKEN = re.compile(r"\S+")
_LONG_TOKEN = 512
_WINDOW = 320  # an address is at most 64 + 1 + 255 characters


def _mask_emails(text: str, replacement: str) -> tuple[str, int]:
    """EMAIL.subn applied only to whitespace-free tokens that contain an `@`.

    On the whole text the pattern is quadratic in the length of a long run of address characters
    (a 200 kB base64 blob on a page that also has an `@` took 35 s; datatrove's PIIFormatter, same
    pattern, has this problem). Tokens longer than 512 characters are matched in windows of 320
    characters around each `@`, which bounds the work per `@`.
    """
    n = 0

    def token(m: re.Match) -> str:
        nonlocal n
        tok = m.group(0)
        if "@" not in tok:
            return tok
        if len(tok) <= _LONG_TOKEN:
            tok, k = EMAIL.subn(replacement, tok)
            n += k
            return tok
        parts, start = [], 0
        at = tok.find("@")
        while at != -1:
            lo, hi = max(start, at - _WINDOW), min(len(tok), at + _WINDOW)
            window, k = EMAIL.subn(replacement, tok[lo:hi])
            parts += [tok[start:lo], window]
            n += k
            start = hi
            at = tok.find("@", hi)
        parts.append(tok[start:])
        return "".join(parts)

    return _TOKEN.sub(token, text), n


def find_phones(text: str) -> list[str]:
    """The phone numbers `pii` would mask in `text` (before e-mails and IPs are masked)."""
    return [m.group(0) for m in PHONE.finditer(text) if _valid_phone(m)]


def _sub_valid(
    pattern: re.Pattern, text: str, replacement: str, valid: Callable[[re.Match], bool]
) -> tuple[str, int]:
    """`pattern.subn` that keeps matches `valid` rejects."""
    n = 0

    def repl(m: re.Match) -> str:
        nonlocal n
        if valid(m):
            n += 1
            return replacement
        return m.group(0)

    return pattern.sub(repl, text), n
