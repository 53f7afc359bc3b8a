"""Exit statuses of the ``autograph`` command, and the errors that decide them."""

EXIT_OK, EXIT_CONVERSION, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad command-line input: printed as one line, exit status 2."""


class FileError(Exception):
    """A file that cannot be converted at all (it does not parse): exit status 1."""
