from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.point import Point





T = TypeVar("T", bound="TenantLoadView")



@_attrs_define
class TenantLoadView:
    """ One tenant's request load, as the windows kept it (each window keeps its heaviest tenants).

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
            tenant (str): The tenant.
            shards (list[str]): The shards its load landed on.
            overcount_ms (float): How much statement time (ms) its rank may have inherited from lighter tenants it
                displaced in a window's top list: 0 means its counts are exact.
            series (list[Point]): Per step (with `step`).
            vshard (int | None | Unset): Its home vshard (`h(tenant) mod V`, whose shard holds its data), on this instance's
                shard map: the heat map's row its home load falls in. `null` when it is pinned to a
                shard (its load is charged to no vshard) or no longer exists.
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
    tenant: str
    shards: list[str]
    overcount_ms: float
    series: list[Point]
    vshard: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.point import Point # noqa: PLC0415
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

        tenant = self.tenant

        shards = self.shards



        overcount_ms = self.overcount_ms

        series = []
        for series_item_data in self.series:
            series_item = series_item_data.to_dict()
            series.append(series_item)



        vshard: int | None | Unset
        if isinstance(self.vshard, Unset):
            vshard = UNSET
        else:
            vshard = self.vshard


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
            "tenant": tenant,
            "shards": shards,
            "overcount_ms": overcount_ms,
            "series": series,
        })
        if vshard is not UNSET:
            field_dict["vshard"] = vshard

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.point import Point # noqa: PLC0415
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

        tenant = d.pop("tenant")

        shards = cast(list[str], d.pop("shards"))


        overcount_ms = d.pop("overcount_ms")

        series = []
        _series = d.pop("series")
        for series_item_data in (_series):
            series_item = Point.from_dict(series_item_data)



            series.append(series_item)


        def _parse_vshard(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        vshard = _parse_vshard(d.pop("vshard", UNSET))


        tenant_load_view = cls(
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
            tenant=tenant,
            shards=shards,
            overcount_ms=overcount_ms,
            series=series,
            vshard=vshard,
        )


        tenant_load_view.additional_properties = d
        return tenant_load_view

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
