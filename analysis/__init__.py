"""Analysis stage: OMB result files -> tidy tables -> statistics -> figures, tables and claims."""


import sys


class InputError(ValueError):
    """Bad input: the message is one line naming the file and the field."""

    def __init__(self, path, field, problem):
        self.path, self.field, self.problem = str(path), field, problem
        super().__init__(f"{path}: field '{field}': {problem}")


def cli(body) -> int:
    """Runs a command's body (a function returning its exit code, None for 0); bad input ends the command with one
    line on stderr and exit code 2, before anything of its outputs is written."""
    try:
        return body() or 0
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
