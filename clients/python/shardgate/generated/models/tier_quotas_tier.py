from enum import StrEnum

class TierQuotasTier(StrEnum):
    FREE = "free"
    PREMIUM = "premium"
    STANDARD = "standard"

    def __str__(self) -> str:
        return str(self.value)
