"""Errors that end a run before anything is written, with one clear line and exit code 2."""


class ConfigError(Exception):
    """Bad recipe or command line: the message names the file, the key path and what is expected."""


class RunError(Exception):
    """The run itself failed (e.g. a ledger that does not balance): exit code 1."""
