from enum import StrEnum

class RouteExplanationStrategy(StrEnum):
    HASH = "hash"
    LOOKUP = "lookup"
    RANGE = "range"
    RECORD_HASH = "record_hash"

    def __str__(self) -> str:
        return str(self.value)
