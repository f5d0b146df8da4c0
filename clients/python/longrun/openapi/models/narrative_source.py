from enum import StrEnum


class NarrativeSource(StrEnum):
    MODEL = "model"
    RECORDS = "records"

    def __str__(self) -> str:
        return str(self.value)
