from enum import StrEnum

class CollectionSummaryDistribution(StrEnum):
    HASH = "hash"
    RANGE = "range"
    TENANT = "tenant"

    def __str__(self) -> str:
        return str(self.value)
