from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="Rates")



@_attrs_define
class Rates:
    """ Rates over a span: each measure per second.

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
     """

    reads_per_s: float
    writes_per_s: float
    rows_read_per_s: float
    rows_written_per_s: float
    bytes_read_per_s: float
    bytes_written_per_s: float
    statement_ms_per_s: float
    errors_per_s: float
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

        rates = cls(
            reads_per_s=reads_per_s,
            writes_per_s=writes_per_s,
            rows_read_per_s=rows_read_per_s,
            rows_written_per_s=rows_written_per_s,
            bytes_read_per_s=bytes_read_per_s,
            bytes_written_per_s=bytes_written_per_s,
            statement_ms_per_s=statement_ms_per_s,
            errors_per_s=errors_per_s,
        )


        rates.additional_properties = d
        return rates

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
