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
  * phone, written with `+` (+44 20 7946 0958, (+44) 20 7946 0958, +1-212-555-0100): 8 to 15 digits.
  * phone, national formats (no `+`): a run of digit groups with 8 to 15 digits, not glued to a date,
    a time or a run of space-separated numbers ("997 998 999 1000"), is masked when
      - it is North American with separators ((212) 555-0100, 212-555-0100, 1-800-273-8255; any
        exchange: fictional and unassigned numbers are written the same way), or
      - libphonenumber's metadata (the `phonenumbers` package) says it is a valid number of one of
        `phone_regions` (default: the 40 countries with the most web pages), grouped as that country
        writes it: "612 34 56 78" (ES), "(11) 96123-4567" (BR), "8 (912) 345-67-89" (RU), "081234 56789"
        (IN), "08-12 34 56" (SE), with or without the trunk prefix (stages/_phones.py); a number written
        with its trunk 0 in at most 4 groups needs only to be valid ("0207 153 9153").
    A bare digit run is a phone only when it is a 10-11 digit national number with a trunk 0 valid in a
    region (07700900123) or has the North American shape (2831823829).
    Kept: dates in any order and separator, year ranges (1914-1918), counts and prices grouped in
    thousands ("734 000 000", unless a phone word such as "Tel" or "call" precedes), US social security
    and ZIP+4 shapes, decimals, numbers inside a DOI, URL or path, and any number after an identifier
    word ("Build number 2023112801", "The checksum is 3141592653", "Lottery numbers: 04 11 23 35 42 49",
    ISBN, order, serial, ...); like Dolma, a `+` number after `isbn`, `doi` or `#` is kept.
"""
from __future__ import annotations

import ipaddress
import re
from typing import Callable

import pyarrow as pa
from pydantic import Field, field_validator

from stages._arrow import set_column
from stages._phones import TOP_REGIONS, national_phone, unknown_regions, valid_anywhere
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
    # national: a run of digit groups, not right after a number and a separator ("997 998 999 1000" is a
    # run of numbers), optionally opening with a parenthesised group ((11) 96123-4567, (06 1) 234 5678) or a
    # group then one (8 (912) 345-67-89, 1 (800) 273-8255). `_valid_phone` judges its shape.
    r"|(?<!\d[/.\-: ])(?=\(?\d(?:[ ()\u00a0.\-/]{0,2}\d){7})"  # 8 digits at least: no year, date or count
    r"(?:\(\d{1,6}(?: \d{1,4})?\)[ \u00a0\-.]?|\d{1,6}[ \u00a0\-.]?\(\d{1,6}\)[ \u00a0\-.]?)?"
    rf"\d{{1,11}}(?:{_SEP}\d{{1,10}}){{0,6}}"
    r")(?![\w]|[.,/\-: ]\d)"
)
# North American, optional country code 1: (212) 555-0100, (283)-182-3829, 212-555-0100, 212.555.0100,
# 212 555 0100, 1-800-273-8255, 1 (800) 273-8255. Area code [2-9]xx; any exchange (fictional and
# unassigned numbers are written the same way and are just as personal).
NANP = re.compile(r"(?:1[ \-.]?)?(?:\([2-9]\d{2}\)[ \-.]?|[2-9]\d{2}[ \-.])\d{3}[ \-.]\d{4}")
_DIGIT_RUN = re.compile(r"\d+")
_VERSION_BEFORE = re.compile(r"\b(?:v|version|ver\.?|release|build)\s*$", re.IGNORECASE)
_PHONE_CONTEXT = re.compile(r"(?:isbn|doi|#)[\s:]*$", re.IGNORECASE)
# A number without `+` after one of these words (and "number", "no.", "is", ...) is an identifier, not a
# phone number: "Build number 2023112801", "The checksum is 3141592653", "Order no. 0612345678".
_BARE_CONTEXT = re.compile(
    r"\b(?:isbn(?:-1[03])?|issn|doi|pmid|arxiv|order|invoice|ref|reference|account|acct|tracking|serial|sku|"
    r"patent|id|ids|item|ticket|transaction|barcode|ean|upc|build|checksum|hash|crc|lottery|draw|winning|"
    r"version|release|revision|commit|isin|iban|bic|vat|tax|zip|postal|postcode)\b"
    # separators that cannot hold `:` or `=`: a run of colons splits one way only (\W{0,3} could eat
    # them too, and `id` + 36 colons took hours of backtracking before each number)
    r"(?:[^\w:=]{0,3}(?:numbers?|nos?|nr|nums?|ids?|codes?|is|are|was|were|of|:|=))*[^\w:=]{0,3}$|#\s*$",
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
    phone_regions: list[str] = Field(list(TOP_REGIONS), description=(
        "regions (ISO 3166 codes) whose national phone formats are recognised without `+`: a number must be valid "
        "there (libphonenumber's metadata) and grouped as that region writes it; default: the 40 countries with "
        "the most web pages"))

    @field_validator("phone_regions")
    @classmethod
    def _known_regions(cls, v):
        bad = unknown_regions(v)
        if bad:
            raise ValueError(f"unknown phone regions {bad}: use ISO 3166 codes libphonenumber knows, e.g. 'DE', 'GB'")
        return v
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
            regions = tuple(c.phone_regions)
            text, n_phone = _sub_valid(PHONE, text, c.phone_replacement, lambda m: _valid_phone(m, regions))
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


def _valid_phone(m: re.Match, regions: tuple[str, ...] = TOP_REGIONS) -> bool:
    """Cheap shape checks first, then the context before the match, then libphonenumber's metadata."""
    s = m.group(0)
    digits = sum(map(str.isdigit, s))
    if s[0] == "+" or s.startswith("(+"):
        # `+` numbers are unambiguous from 8 digits
        return 8 <= digits <= 15 and not _PHONE_CONTEXT.search(m.string, max(0, m.start() - 8), m.start())
    if not 8 <= digits <= 15:
        return False
    if m.start() and m.string[m.start() - 1] in "./=_&?%":  # inside a DOI, URL or path: "science.162.3859.1243"
        return False
    bare = s.isdigit()
    if bare:
        if not _bare_shape(s):
            return False
    elif NANP.fullmatch(s) is None:
        if _DATE.fullmatch(s) or (digits == 8 and ("." in s or "/" in s)):  # dd.mm.yyyy, mm/dd/yyyy
            return False
        if _QUANTITY.fullmatch(s) or _numeric_range(s):
            return False
        if _THOUSANDS.fullmatch(s) and not _PHONE_CUE.search(m.string, max(0, m.start() - 32), m.start()):
            return False
    if _BARE_CONTEXT.search(m.string, max(0, m.start() - 40), m.start()):
        return False
    if bare:
        return s[0] != "0" or valid_anywhere(s, regions)
    if NANP.fullmatch(s) is not None:
        return True
    # With a trunk 0 written ("0207 153 9153": the London area code is 020), the digits say enough: any
    # grouping in at most 4 groups of 2+ digits of a number valid with its trunk prefix in one of the regions
    # (a run of 6 two-digit numbers, "04 11 23 35 42 49", is a draw, not a phone).
    if s[0] == "0" or s.startswith("(0"):
        groups = _DIGIT_RUN.findall(s)
        if len(groups) <= 4 and min(map(len, groups[1:])) >= 2 and valid_anywhere("".join(groups), regions):
            return True
    return national_phone(s, regions)


def _bare_shape(s: str) -> bool:
    """A run of digits without separators that has the shape of a phone number.

    National with trunk 0 (07700900123, 10-11 digits, not 00...; it must also be valid in one of the
    regions); North American 10 digits with an area code 2-9xx (2831823829), or 11 with the country code
    1. Runs starting 1 that are not 1 + NANP (1234567890, Unix timestamps 1.0e9-2.0e9) are kept.
    """
    if s[0] == "0":
        return 10 <= len(s) <= 11 and s[1] != "0"
    if len(s) == 10:
        return s[0] in "23456789"
    return len(s) == 11 and s[0] == "1" and s[1] in "23456789"


# Shapes of numbers that are not phone numbers whatever a numbering plan allows: a US social security
# number, a ZIP+4 code, a year in parentheses then a page range ("(1990) 182-199").
_DATE = re.compile(r"(?:\d{1,2}[-./ ]\d{1,2}|\d{4}[-./ ]\d{1,2})[-./ ]\d{1,4}")
_QUANTITY = re.compile(r"\d{3}-\d{2}-\d{4}|\d{5}-\d{4}|\((?:1[5-9]|20)\d\d\).*")
# A number grouped in thousands ("734 000 000", "22 338 618") reads as a count unless a phone word precedes
# it; Polish, Czech and Portuguese mobiles ("512 345 678") are grouped the same way.
_THOUSANDS = re.compile(r"\d{1,3}(?:[ \u00a0.]\d{3})+")
_PHONE_CUE = re.compile(
    r"(?:\b(?:tel|tél|telf|tlf|phone|call|fax|mobile?|mob|cell|gsm|hotline|whatsapp|contact|kontakt|telefon\w*|"
    r"tfn|puhelin|handy|ring|celular|móvil|movil|cellulare|telemóvel|тел\w*|моб\w*|факс)\b|电话|電話|手机|携帯|"
    r"전화)\W{0,12}(?:\w+\W{1,3}){0,2}$|[:☎📞]\s*$",
    re.IGNORECASE,
)


def _numeric_range(s: str) -> bool:
    """Two groups of the same length joined by a hyphen, the second larger: a range ("1600-1800")."""
    a, sep, b = s.partition("-")
    return bool(sep) and a.isdigit() and b.isdigit() and len(a) == len(b) and int(b) > int(a)


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


def find_phones(text: str, regions: tuple[str, ...] = TOP_REGIONS) -> list[str]:
    """The phone numbers `pii` would mask in `text` (before e-mails and IPs are masked)."""
    return [m.group(0) for m in PHONE.finditer(text) if _valid_phone(m, regions)]


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
