from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.heat_metric import HeatMetric
from ..models.heat_work import HeatWork
from typing import cast

if TYPE_CHECKING:
  from ..models.heat_row_view import HeatRowView





T = TypeVar("T", bound="HeatMapView")



@_attrs_define
class HeatMapView:
    """ A heat map of vshards (rows) by time (columns), as a Key Visualizer draws it.

        Attributes:
            metric (HeatMetric): The measure a heat map shows.
            work (HeatWork): Whose work a heat map shows.
            since (str): The first column's start, RFC 3339.
            until (str): The last column's end, RFC 3339: the end of the last closed window.
            step_s (float): The width of a column (seconds).
            columns (list[str]): Each column's start, RFC 3339.
            rows (list[HeatRowView]): Every vshard in vshard order, then one row per shard (in the map's order) for its load
                that no vshard placed.
     """

    metric: HeatMetric
    work: HeatWork
    since: str
    until: str
    step_s: float
    columns: list[str]
    rows: list[HeatRowView]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.heat_row_view import HeatRowView # noqa: PLC0415
        metric = self.metric.value

        work = self.work.value

        since = self.since

        until = self.until

        step_s = self.step_s

        columns = self.columns



        rows = []
        for rows_item_data in self.rows:
            rows_item = rows_item_data.to_dict()
            rows.append(rows_item)




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "metric": metric,
            "work": work,
            "since": since,
            "until": until,
            "step_s": step_s,
            "columns": columns,
            "rows": rows,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.heat_row_view import HeatRowView # noqa: PLC0415
        d = dict(src_dict)
        metric = HeatMetric(d.pop("metric"))




        work = HeatWork(d.pop("work"))




        since = d.pop("since")

        until = d.pop("until")

        step_s = d.pop("step_s")

        columns = cast(list[str], d.pop("columns"))


        rows = []
        _rows = d.pop("rows")
        for rows_item_data in (_rows):
            rows_item = HeatRowView.from_dict(rows_item_data)



            rows.append(rows_item)


        heat_map_view = cls(
            metric=metric,
            work=work,
            since=since,
            until=until,
            step_s=step_s,
            columns=columns,
            rows=rows,
        )


        heat_map_view.additional_properties = d
        return heat_map_view

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
