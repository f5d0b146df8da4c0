from enum import StrEnum


class CheckKind(StrEnum):
    COMMAND = "command"
    CONTAINS = "contains"
    GRADER = "grader"
    MAPPED = "mapped"
    MATCHES = "matches"

    def __str__(self) -> str:
        return str(self.value)
