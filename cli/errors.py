"""The CLI's user errors."""


class CliError(Exception):
    """A user error: printed as one line, exit status 2."""
