from enum import StrEnum

class BalancerMode(StrEnum):
    APPLY = "apply"
    OFF = "off"
    PROPOSE = "propose"

    def __str__(self) -> str:
        return str(self.value)
