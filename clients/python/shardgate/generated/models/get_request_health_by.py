from enum import StrEnum

class GetRequestHealthBy(StrEnum):
    ROUTE = "route"
    SHARD = "shard"

    def __str__(self) -> str:
        return str(self.value)
