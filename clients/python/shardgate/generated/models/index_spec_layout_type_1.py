from enum import StrEnum

class IndexSpecLayoutType1(StrEnum):
    COVERING = "covering"
    FULL = "full"
    NORMALIZED = "normalized"

    def __str__(self) -> str:
        return str(self.value)
