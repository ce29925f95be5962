from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="Measures")



@_attrs_define
class Measures:
    """ Counts over a span, and the same as rates.

        Attributes:
            reads_per_s (float): Statements that read, per second.
            writes_per_s (float): Statements that wrote, per second.
            rows_read_per_s (float): Rows read per second.
            rows_written_per_s (float): Rows written per second.
            bytes_read_per_s (float): Bytes read per second (record values, blob chunks).
            bytes_written_per_s (float): Bytes written per second.
            statement_ms_per_s (float): Statement time per second (ms/s): the shard's time this load took, waiting for a
                connection included; 1000 is one statement in progress all the time.
            errors_per_s (float): Failed or refused statements per second.
            reads (int): Statements that read.
            writes (int): Statements that wrote.
            rows_read (int): Rows read.
            rows_written (int): Rows written.
            bytes_read (int): Bytes read.
            bytes_written (int): Bytes written.
            statement_ms (float): Statement time (ms).
            errors (int): Failed or refused statements.
     """

    reads_per_s: float
    writes_per_s: float
    rows_read_per_s: float
    rows_written_per_s: float
    bytes_read_per_s: float
    bytes_written_per_s: float
    statement_ms_per_s: float
    errors_per_s: float
    reads: int
    writes: int
    rows_read: int
    rows_written: int
    bytes_read: int
    bytes_written: int
    statement_ms: float
    errors: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        reads_per_s = self.reads_per_s

        writes_per_s = self.writes_per_s

        rows_read_per_s = self.rows_read_per_s

        rows_written_per_s = self.rows_written_per_s

        bytes_read_per_s = self.bytes_read_per_s

        bytes_written_per_s = self.bytes_written_per_s

        statement_ms_per_s = self.statement_ms_per_s

        errors_per_s = self.errors_per_s

        reads = self.reads

        writes = self.writes

        rows_read = self.rows_read

        rows_written = self.rows_written

        bytes_read = self.bytes_read

        bytes_written = self.bytes_written

        statement_ms = self.statement_ms

        errors = self.errors


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "reads_per_s": reads_per_s,
            "writes_per_s": writes_per_s,
            "rows_read_per_s": rows_read_per_s,
            "rows_written_per_s": rows_written_per_s,
            "bytes_read_per_s": bytes_read_per_s,
            "bytes_written_per_s": bytes_written_per_s,
            "statement_ms_per_s": statement_ms_per_s,
            "errors_per_s": errors_per_s,
            "reads": reads,
            "writes": writes,
            "rows_read": rows_read,
            "rows_written": rows_written,
            "bytes_read": bytes_read,
            "bytes_written": bytes_written,
            "statement_ms": statement_ms,
            "errors": errors,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        reads_per_s = d.pop("reads_per_s")

        writes_per_s = d.pop("writes_per_s")

        rows_read_per_s = d.pop("rows_read_per_s")

        rows_written_per_s = d.pop("rows_written_per_s")

        bytes_read_per_s = d.pop("bytes_read_per_s")

        bytes_written_per_s = d.pop("bytes_written_per_s")

        statement_ms_per_s = d.pop("statement_ms_per_s")

        errors_per_s = d.pop("errors_per_s")

        reads = d.pop("reads")

        writes = d.pop("writes")

        rows_read = d.pop("rows_read")

        rows_written = d.pop("rows_written")

        bytes_read = d.pop("bytes_read")

        bytes_written = d.pop("bytes_written")

        statement_ms = d.pop("statement_ms")

        errors = d.pop("errors")

        measures = cls(
            reads_per_s=reads_per_s,
            writes_per_s=writes_per_s,
            rows_read_per_s=rows_read_per_s,
            rows_written_per_s=rows_written_per_s,
            bytes_read_per_s=bytes_read_per_s,
            bytes_written_per_s=bytes_written_per_s,
            statement_ms_per_s=statement_ms_per_s,
            errors_per_s=errors_per_s,
            reads=reads,
            writes=writes,
            rows_read=rows_read,
            rows_written=rows_written,
            bytes_read=bytes_read,
            bytes_written=bytes_written,
            statement_ms=statement_ms,
            errors=errors,
        )


        measures.additional_properties = d
        return measures

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
