from enum import StrEnum

class IndexSpecLayoutType2Type1(StrEnum):
    COVERING = "covering"
    FULL = "full"
    NORMALIZED = "normalized"

    def __str__(self) -> str:
        return str(self.value)
