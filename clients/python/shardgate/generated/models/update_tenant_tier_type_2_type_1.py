from enum import StrEnum

class UpdateTenantTierType2Type1(StrEnum):
    FREE = "free"
    PREMIUM = "premium"
    STANDARD = "standard"

    def __str__(self) -> str:
        return str(self.value)
