from enum import StrEnum


class NextAction(StrEnum):
    ASK_USER = "ask_user"
    EXECUTE = "execute"
    REPLAN = "replan"
    STOP = "stop"

    def __str__(self) -> str:
        return str(self.value)
