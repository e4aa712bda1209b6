"""Analysis stage: OMB result files -> tidy tables -> statistics -> figures, tables and claims."""


class InputError(ValueError):
    """Bad input: the message is one line naming the file and the field."""

    def __init__(self, path, field, problem):
        self.path, self.field, self.problem = str(path), field, problem
        super().__init__(f"{path}: field '{field}': {problem}")
