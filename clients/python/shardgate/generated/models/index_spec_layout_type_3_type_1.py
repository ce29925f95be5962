from enum import StrEnum

class IndexSpecLayoutType3Type1(StrEnum):
    COVERING = "covering"
    FULL = "full"
    NORMALIZED = "normalized"

    def __str__(self) -> str:
        return str(self.value)
