from enum import StrEnum

class QuotaSource(StrEnum):
    ADMIN = "admin"
    CONFIGURATION = "configuration"

    def __str__(self) -> str:
        return str(self.value)
