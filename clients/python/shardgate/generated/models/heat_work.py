from enum import StrEnum

class HeatWork(StrEnum):
    MAINTENANCE = "maintenance"
    MOVE = "move"
    REQUEST = "request"

    def __str__(self) -> str:
        return str(self.value)
