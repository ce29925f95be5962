from enum import StrEnum

class MoveKind(StrEnum):
    TENANT = "tenant"
    VSHARD = "vshard"

    def __str__(self) -> str:
        return str(self.value)
