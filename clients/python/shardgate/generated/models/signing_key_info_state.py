from enum import StrEnum

class SigningKeyInfoState(StrEnum):
    ACTIVE = "active"
    CURRENT = "current"
    RETIRED = "retired"

    def __str__(self) -> str:
        return str(self.value)
