from enum import StrEnum

class CreateTenantTierType2Type1(StrEnum):
    FREE = "free"
    PREMIUM = "premium"
    STANDARD = "standard"

    def __str__(self) -> str:
        return str(self.value)
