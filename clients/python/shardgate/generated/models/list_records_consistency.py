from enum import StrEnum

class ListRecordsConsistency(StrEnum):
    PARTIAL = "partial"
    STRICT = "strict"

    def __str__(self) -> str:
        return str(self.value)
