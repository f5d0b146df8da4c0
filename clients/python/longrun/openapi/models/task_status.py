from enum import StrEnum


class TaskStatus(StrEnum):
    DONE = "done"
    ENDED = "ended"
    RUNNING = "running"

    def __str__(self) -> str:
        return str(self.value)
