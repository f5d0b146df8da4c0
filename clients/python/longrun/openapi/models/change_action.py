from enum import StrEnum


class ChangeAction(StrEnum):
    CREATED = "created"
    UPDATED = "updated"

    def __str__(self) -> str:
        return str(self.value)
