from enum import StrEnum

class BreakerAction(StrEnum):
    FORCE_OPEN = "force_open"
    RESET = "reset"

    def __str__(self) -> str:
        return str(self.value)
