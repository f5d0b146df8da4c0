from enum import StrEnum


class PermissionMode(StrEnum):
    APPROVE_PLAN = "approve_plan"
    AUTOPILOT = "autopilot"
    PER_WRITE = "per_write"

    def __str__(self) -> str:
        return str(self.value)
