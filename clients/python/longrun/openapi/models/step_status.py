from enum import StrEnum


class StepStatus(StrEnum):
    BLOCKED = "blocked"
    DONE = "done"
    IN_PROGRESS = "in_progress"
    PENDING = "pending"

    def __str__(self) -> str:
        return str(self.value)
