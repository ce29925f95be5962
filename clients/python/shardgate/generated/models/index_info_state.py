from enum import StrEnum

class IndexInfoState(StrEnum):
    ACTIVE = "active"
    BUILDING = "building"
    FAILED = "failed"

    def __str__(self) -> str:
        return str(self.value)
