from enum import StrEnum

class ProposalState(StrEnum):
    APPROVED = "approved"
    EXPIRED = "expired"
    FAILED = "failed"
    PENDING = "pending"

    def __str__(self) -> str:
        return str(self.value)
