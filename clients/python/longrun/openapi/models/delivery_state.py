from enum import StrEnum


class DeliveryState(StrEnum):
    DELIVERED = "delivered"
    GIVEN_UP = "given_up"
    PENDING = "pending"

    def __str__(self) -> str:
        return str(self.value)
