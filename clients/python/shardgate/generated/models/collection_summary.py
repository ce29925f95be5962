from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.collection_summary_distribution import CollectionSummaryDistribution
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.range_view import RangeView





T = TypeVar("T", bound="CollectionSummary")



@_attrs_define
class CollectionSummary:
    """ One collection of a tenant.

        Attributes:
            name (str): The collection's name.
            distribution (CollectionSummaryDistribution): `tenant` (the whole collection on the tenant's home shard), `hash`
                or `range`. Example: tenant.
            records (int): Its live records, counted now on the shards that answered.
            ranges (list[RangeView] | None | Unset): For `range`: the ranges in ascending `from` order; absent otherwise.
     """

    name: str
    distribution: CollectionSummaryDistribution
    records: int
    ranges: list[RangeView] | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.range_view import RangeView # noqa: PLC0415
        name = self.name

        distribution = self.distribution.value

        records = self.records

        ranges: list[dict[str, Any]] | None | Unset
        if isinstance(self.ranges, Unset):
            ranges = UNSET
        elif isinstance(self.ranges, list):
            ranges = []
            for ranges_type_0_item_data in self.ranges:
                ranges_type_0_item = ranges_type_0_item_data.to_dict()
                ranges.append(ranges_type_0_item)


        else:
            ranges = self.ranges


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "name": name,
            "distribution": distribution,
            "records": records,
        })
        if ranges is not UNSET:
            field_dict["ranges"] = ranges

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.range_view import RangeView # noqa: PLC0415
        d = dict(src_dict)
        name = d.pop("name")

        distribution = CollectionSummaryDistribution(d.pop("distribution"))




        records = d.pop("records")

        def _parse_ranges(data: object) -> list[RangeView] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                ranges_type_0 = []
                _ranges_type_0 = data
                for ranges_type_0_item_data in (_ranges_type_0):
                    ranges_type_0_item = RangeView.from_dict(ranges_type_0_item_data)



                    ranges_type_0.append(ranges_type_0_item)

                return ranges_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[RangeView] | None | Unset, data)

        ranges = _parse_ranges(d.pop("ranges", UNSET))


        collection_summary = cls(
            name=name,
            distribution=distribution,
            records=records,
            ranges=ranges,
        )


        collection_summary.additional_properties = d
        return collection_summary

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
