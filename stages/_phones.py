"""National phone numbers: is a run of digit groups a phone number somewhere, written the way that country writes it?

A number written without `+` carries no country, and its digits alone prove little: a 10-digit checksum
or a 12-digit lottery draw is a valid number in some numbering plan. So a candidate is a phone number when,
for one of the regions tried,

  1. libphonenumber's metadata (the `phonenumbers` package, MIT) says its digits are a *valid* number of
     that region, read with or without the region's trunk prefix (0, 8, 06, ...); and
  2. its grouping is the region's: the positions where the candidate breaks between digit groups are
     those of libphonenumber's national format of that number ("612 34 56 78" in Spain, "(11) 96123-4567"
     in Brazil, "8 (912) 345-67-89" in Russia), or of its international format's national part, the trunk
     prefix a group of its own. From 9 digits on, a subset of those breaks is enough when the separators
     are spaces or hyphens ("02-27654066": fewer separators than the national format "02 2765 4066"); dots
     and slashes must sit where the format breaks, and one dot between two groups is a decimal number.

The regions tried default to `TOP_REGIONS`. A region is tried only when the length and the general
pattern of its metadata admit the digits (precompiled here); `phonenumbers.parse` and `is_valid_number`
decide the few that remain.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterable

# The 40 countries with the most web pages, approximated from the country-code top-level domains and
# the content languages of Common Crawl's crawl statistics (commoncrawl.github.io/cc-crawl-statistics),
# the English-language .com share spread over US, GB, CA, AU, IN.
TOP_REGIONS: tuple[str, ...] = (
    "US", "GB", "DE", "FR", "JP", "CN", "RU", "BR", "IN", "IT", "ES", "NL", "PL", "CA", "AU", "KR", "MX", "TR",
    "ID", "SE", "CH", "AT", "BE", "CZ", "UA", "AR", "IR", "VN", "TW", "HK", "PT", "DK", "NO", "FI", "GR", "HU",
    "RO", "ZA", "TH", "IL",
)
_DIGITS = re.compile(r"\d+")


class _Region:
    __slots__ = ("code", "prefix", "lengths", "pattern", "parsing", "transforms")

    def __init__(self, code: str):
        import phonenumbers

        meta = phonenumbers.PhoneMetadata.metadata_for_region(code)
        self.code = code
        self.prefix = meta.national_prefix or ""
        self.lengths = frozenset(meta.general_desc.possible_length or ())
        self.pattern = re.compile(meta.general_desc.national_number_pattern or r"(?!)")
        # how the region's trunk (and carrier) prefix is recognised: "0", "8", "(?:0|90)(...)" ...
        self.parsing = re.compile(meta.national_prefix_for_parsing) if meta.national_prefix_for_parsing else None
        # a few regions rewrite the digits after the prefix (Argentina's mobile "15"): phonenumbers decides
        self.transforms = bool(meta.national_prefix_transform_rule)

    def admits(self, digits: str) -> bool:
        """The digits, or the digits after the trunk prefix, have a length and shape of this region."""
        if self.transforms or (len(digits) in self.lengths and self.pattern.fullmatch(digits)):
            return True
        rests = []
        if self.prefix and digits.startswith(self.prefix):
            rests.append(digits[len(self.prefix):])
        m = self.parsing.match(digits) if self.parsing else None
        if m and m.end():
            rests.append(digits[m.end():])
        return any(len(r) in self.lengths and self.pattern.fullmatch(r) for r in rests)


@lru_cache(maxsize=None)
def _regions(codes: tuple[str, ...]) -> tuple[_Region, ...]:
    import phonenumbers

    # phonenumbers compiles its metadata's expressions on every call; the 40 regions' hundreds of them
    # overflow the `re` module's cache of 512. Keep them (newer phonenumbers only).
    enable = getattr(phonenumbers, "enable_pattern_cache", None)
    if enable is not None:
        enable()
    return tuple(_Region(c) for c in codes)


def unknown_regions(codes: Iterable[str]) -> list[str]:
    import phonenumbers

    return [c for c in codes if c not in phonenumbers.SUPPORTED_REGIONS]


def _breaks(groups: list[str]) -> tuple[frozenset[int], int]:
    """Positions (digit offsets) where a new group starts, and the number of digits."""
    out, n = set(), 0
    for g in groups:
        if n:
            out.add(n)
        n += len(g)
    return frozenset(out), n


def _reference_breaks(formatted_groups: list[str], digits: str) -> frozenset[int] | None:
    """The breaks of a formatted number re-based onto `digits`, which may lack or add its trunk prefix."""
    ref, _ = _breaks(formatted_groups)
    fdigits = "".join(formatted_groups)
    if fdigits == digits:
        return ref
    if fdigits.endswith(digits):  # trunk prefix written in the format, omitted in the text
        shift = len(fdigits) - len(digits)
        return frozenset(b - shift for b in ref if b > shift)
    if digits.endswith(fdigits):  # trunk prefix in the text, not in the format: it is a group of its own
        shift = len(digits) - len(fdigits)
        return frozenset({shift} | {b + shift for b in ref})
    return None


@lru_cache(maxsize=4096)  # a page repeats its numbers (footers, price lists)
def national_phone(candidate: str, regions: tuple[str, ...] = TOP_REGIONS) -> bool:
    """`candidate` (digits, separators, parentheses; no `+`) is a valid number of one of `regions` in its grouping."""
    import phonenumbers
    from phonenumbers import PhoneNumberFormat

    groups = _DIGITS.findall(candidate)
    breaks, n = _breaks(groups)
    if not breaks:
        return False
    # Fewer breaks than the format are fine from 9 digits, between groups split by spaces or hyphens; a dot
    # or a slash must sit where the format breaks ("030/12345678"), and one dot between two groups is a
    # decimal number ("3.14159265").
    dotted = "." in candidate or "/" in candidate
    if "." in candidate and len(groups) == 2:
        return False
    loose = n >= 9 and not dotted
    digits = "".join(groups)
    for region in _regions(regions):
        if not region.admits(digits):
            continue
        try:
            num = phonenumbers.parse(digits, region.code)
        except phonenumbers.NumberParseException:
            continue
        if not phonenumbers.is_valid_number(num):
            continue
        national = _DIGITS.findall(phonenumbers.format_number(num, PhoneNumberFormat.NATIONAL))
        international = _DIGITS.findall(phonenumbers.format_number(num, PhoneNumberFormat.INTERNATIONAL))[1:]
        for ref_groups in (national, international):
            ref = _reference_breaks(ref_groups, digits)
            if ref is None:
                continue
            if breaks == ref or (loose and breaks <= ref):
                return True
    return False


@lru_cache(maxsize=4096)
def valid_anywhere(digits: str, regions: tuple[str, ...] = TOP_REGIONS) -> bool:
    """`digits` (no separators) is a valid number of one of `regions`, with or without its trunk prefix."""
    import phonenumbers

    for region in _regions(regions):
        if region.admits(digits):
            try:
                if phonenumbers.is_valid_number(phonenumbers.parse(digits, region.code)):
                    return True
            except phonenumbers.NumberParseException:
                continue
    return False
