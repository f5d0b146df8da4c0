from enum import StrEnum


class StopType(StrEnum):
    BUDGET = "budget"
    CANCELED = "canceled"
    COMPLETED = "completed"
    ERROR = "error"
    MAX_ITERATIONS = "max_iterations"
    NO_PROGRESS = "no_progress"
    REPEATED_ERROR = "repeated_error"
    WAITING_ON_USER = "waiting_on_user"

    def __str__(self) -> str:
        return str(self.value)
