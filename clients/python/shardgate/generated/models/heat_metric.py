from enum import StrEnum

class HeatMetric(StrEnum):
    BYTES_READ_PER_S = "bytes_read_per_s"
    BYTES_WRITTEN_PER_S = "bytes_written_per_s"
    ERRORS_PER_S = "errors_per_s"
    READS_PER_S = "reads_per_s"
    ROWS_READ_PER_S = "rows_read_per_s"
    ROWS_WRITTEN_PER_S = "rows_written_per_s"
    STATEMENT_MS_PER_S = "statement_ms_per_s"
    WRITES_PER_S = "writes_per_s"

    def __str__(self) -> str:
        return str(self.value)
