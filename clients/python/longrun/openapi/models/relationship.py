from enum import StrEnum


class Relationship(StrEnum):
    DERIVED_FROM = "derived_from"
    SUPPORTS = "supports"

    def __str__(self) -> str:
        return str(self.value)
