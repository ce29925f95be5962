from enum import StrEnum

class ListTenantsInclude(StrEnum):
    USAGE = "usage"

    def __str__(self) -> str:
        return str(self.value)
