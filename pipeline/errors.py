"""Errors that end a run before anything is written, with one clear line and exit code 2."""


class ConfigError(Exception):
    """Bad recipe or command line: the message names the file, the key path and what is expected."""


class RunError(Exception):
    """The run itself failed (e.g. a ledger that does not balance): exit code 1."""


def name_problem(name: object) -> str | None:
    """Why a recipe's name for a source, a stage label or a mixture bucket cannot be used (None: it
    can). These names become folder and file names in the output (rejects/LABEL, sources/NAME.bin):
    `../x` would write, and on a later run delete, outside it."""
    if not isinstance(name, str) or not name:
        return f"expected a non-empty string, got {name!r}"
    if name in (".", "..") or any(c in name for c in "/\\\0"):
        return f"{name!r} cannot be a file name (no '/', '\\', NUL, '.' or '..')"
    return None
