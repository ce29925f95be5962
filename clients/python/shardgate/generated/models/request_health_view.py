from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.request_health_series import RequestHealthSeries





T = TypeVar("T", bound="RequestHealthView")



@_attrs_define
class RequestHealthView:
    """ Request health over a span.

        Attributes:
            by (str): What the series are of: `route` or `shard`.
            since (str): The span's start, RFC 3339 (a window boundary).
            until (str): Its end, RFC 3339: the end of the last window that has closed.
            span_s (float): Its length (seconds).
            step_s (float): The width of a point (seconds).
            instances (int): How many instances stored windows in the span (the counts are their sums).
            series (list[RequestHealthSeries]): One series per route or shard that answered requests in the span, by name.
     """

    by: str
    since: str
    until: str
    span_s: float
    step_s: float
    instances: int
    series: list[RequestHealthSeries]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.request_health_series import RequestHealthSeries # noqa: PLC0415
        by = self.by

        since = self.since

        until = self.until

        span_s = self.span_s

        step_s = self.step_s

        instances = self.instances

        series = []
        for series_item_data in self.series:
            series_item = series_item_data.to_dict()
            series.append(series_item)




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "by": by,
            "since": since,
            "until": until,
            "span_s": span_s,
            "step_s": step_s,
            "instances": instances,
            "series": series,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.request_health_series import RequestHealthSeries # noqa: PLC0415
        d = dict(src_dict)
        by = d.pop("by")

        since = d.pop("since")

        until = d.pop("until")

        span_s = d.pop("span_s")

        step_s = d.pop("step_s")

        instances = d.pop("instances")

        series = []
        _series = d.pop("series")
        for series_item_data in (_series):
            series_item = RequestHealthSeries.from_dict(series_item_data)



            series.append(series_item)


        request_health_view = cls(
            by=by,
            since=since,
            until=until,
            span_s=span_s,
            step_s=step_s,
            instances=instances,
            series=series,
        )


        request_health_view.additional_properties = d
        return request_health_view

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
