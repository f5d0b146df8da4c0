from enum import StrEnum


class GetRunsStatus(StrEnum):
    CANCELED = "canceled"
    COMPLETED = "completed"
    FAILED = "failed"
    PAUSED = "paused"
    QUEUED = "queued"
    RUNNING = "running"
    STOPPED = "stopped"
    VALUE_0 = ""
    WAITING_ON_CHILDREN = "waiting_on_children"
    WAITING_ON_USER = "waiting_on_user"

    def __str__(self) -> str:
        return str(self.value)
