from enum import StrEnum

class JobLeaseHolderKind(StrEnum):
    COLLECTION_REDISTRIBUTE = "collection.redistribute"
    INDEX_AUDIT = "index.audit"
    INDEX_BACKFILL = "index.backfill"
    RANGE_MOVE = "range.move"
    TENANT_MOVE = "tenant.move"
    VSHARDS_REBALANCE = "vshards.rebalance"
    VSHARD_MOVE = "vshard.move"

    def __str__(self) -> str:
        return str(self.value)
