from pipeline.sources.licenses import detect_license, is_license_file

GPL3 = """GNU GENERAL PUBLIC LICENSE
Version 3, 29 June 2007
... The GNU General Public License is a free, copyleft license ...
use the GNU Lesser General Public License instead of this License."""


def test_detects_common_licenses():
    assert detect_license(GPL3) == "GPL-3.0"  # mentions the LGPL, but its title is the GPL
    assert detect_license("GNU LESSER GENERAL PUBLIC LICENSE\nVersion 3, 29 June 2007") == "LGPL-3.0"
    assert detect_license("GNU GENERAL PUBLIC LICENSE\n Version 2, June 1991") == "GPL-2.0"
    assert detect_license("Apache License\n  Version 2.0, January 2004") == "Apache-2.0"
    assert detect_license("Copyright 2020 X\n\nPermission is hereby granted, free of\ncharge, to any") == "MIT"
    assert detect_license("Redistribution and use in source and binary forms ... Neither the name of") == "BSD-3-Clause"
    assert detect_license("Redistribution and use in source and binary forms, with or without") == "BSD-2-Clause"
    assert detect_license("Mozilla Public License Version 2.0") == "MPL-2.0"
    assert detect_license("This is free and unencumbered software released into the public domain.") == "Unlicense"
    assert detect_license("All rights reserved. Ask us.") == "unknown"
    assert detect_license("  ") is None


def test_license_file_names():
    for n in ("LICENSE", "LICENSE.md", "license.txt", "COPYING", "LICENCE", "UNLICENSE", "LICENSE-MIT"):
        assert is_license_file(n), n
    for n in ("license_check.py", "README.md", "licenses.json"):
        assert not is_license_file(n), n
