"""kiln.SpecError: a spec with an error, with its place (docs/python.md)."""


class SpecError(Exception):
    """A spec file (or string) with an error, found when it was loaded or when a composite
    was compiled. ``str(e)`` is Kiln's diagnostic: ``file:line:col: error: ...``, the line and
    a caret under the column, and the call sites when the error is in a called composite."""

    def __init__(self, diagnostic: str, file: str = "", line: int = 0, column: int = 0):
        super().__init__(diagnostic)
        self.diagnostic = diagnostic
        self.file = file
        self.line = line
        self.column = column
