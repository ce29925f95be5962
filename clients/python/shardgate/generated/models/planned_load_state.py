from enum import StrEnum

class PlannedLoadState(StrEnum):
    ACTIVE = "active"
    DRAINING = "draining"
    OFFLINE = "offline"
    READ_ONLY = "read_only"

    def __str__(self) -> str:
        return str(self.value)
