from enum import StrEnum

class IndexInfoLayout(StrEnum):
    COVERING = "covering"
    FULL = "full"
    NORMALIZED = "normalized"

    def __str__(self) -> str:
        return str(self.value)
