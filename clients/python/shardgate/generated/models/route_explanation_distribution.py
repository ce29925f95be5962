from enum import StrEnum

class RouteExplanationDistribution(StrEnum):
    HASH = "hash"
    RANGE = "range"
    TENANT = "tenant"

    def __str__(self) -> str:
        return str(self.value)
