from enum import StrEnum


class EntityType(StrEnum):
    DOCUMENT = "document"
    PLAN_STEP = "plan_step"
    RUN = "run"

    def __str__(self) -> str:
        return str(self.value)
