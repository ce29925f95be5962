from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.collection_distribution_distribution import CollectionDistributionDistribution
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.range_view import RangeView





T = TypeVar("T", bound="CollectionDistribution")



@_attrs_define
class CollectionDistribution:
    """ A collection's distribution.

        Attributes:
            distribution (CollectionDistributionDistribution): `tenant` (the whole collection on the tenant's home shard;
                the default), `hash` (each
                record on the vshard `h(tenant, collection, key)` picks) or `range` (each record on the
                shard of the greatest `from` `<=` its key). Example: hash.
            ranges (list[RangeView] | None | Unset): For `range`: the ranges in ascending `from` order, the first from `""`;
                absent otherwise.
     """

    distribution: CollectionDistributionDistribution
    ranges: list[RangeView] | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.range_view import RangeView # noqa: PLC0415
        distribution = self.distribution.value

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

        field_dict.update({
            "distribution": distribution,
        })
        if ranges is not UNSET:
            field_dict["ranges"] = ranges

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.range_view import RangeView # noqa: PLC0415
        d = dict(src_dict)
        distribution = CollectionDistributionDistribution(d.pop("distribution"))




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


        collection_distribution = cls(
            distribution=distribution,
            ranges=ranges,
        )

        return collection_distribution

