from enum import StrEnum

class ShardFailureReason(StrEnum):
    BREAKER_OPEN = "breaker_open"
    MOVING = "moving"
    SHARD_BUSY = "shard_busy"
    SHARD_ERROR = "shard_error"
    SHARD_OFFLINE = "shard_offline"
    SHARD_UNAVAILABLE = "shard_unavailable"
    TIMEOUT = "timeout"

    def __str__(self) -> str:
        return str(self.value)
