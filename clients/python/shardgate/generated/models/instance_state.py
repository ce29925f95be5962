from enum import StrEnum

class InstanceState(StrEnum):
    GONE = "gone"
    SERVING = "serving"

    def __str__(self) -> str:
        return str(self.value)
