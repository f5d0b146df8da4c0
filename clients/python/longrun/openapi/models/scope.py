from enum import StrEnum


class Scope(StrEnum):
    GLOBAL = "global"
    MULTI_PROJECT = "multi_project"
    PROJECT = "project"

    def __str__(self) -> str:
        return str(self.value)
