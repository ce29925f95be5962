from enum import StrEnum

class RunOutcome(StrEnum):
    BALANCED = "balanced"
    FAILED = "failed"
    HELD = "held"
    NOTHING = "nothing"
    PROPOSED = "proposed"
    STARTED = "started"

    def __str__(self) -> str:
        return str(self.value)
