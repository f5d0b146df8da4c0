from enum import StrEnum


class ChangeKind(StrEnum):
    DOCUMENT = "document"
    PLAN_STEP = "plan_step"

    def __str__(self) -> str:
        return str(self.value)
