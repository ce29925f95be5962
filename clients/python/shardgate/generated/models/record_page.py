from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.listing_explanation import ListingExplanation
  from ..models.record_envelope import RecordEnvelope
  from ..models.shards_summary import ShardsSummary





T = TypeVar("T", bound="RecordPage")



@_attrs_define
class RecordPage:
    """ A page of records.

        Attributes:
            items (list[RecordEnvelope]): This page's records, ordered by key (byte order); empty with `explain=true`.
            next_cursor (None | str | Unset): Pass as `cursor` to get the next page; `null` on the last page.
            field_shards (None | ShardsSummary | Unset):
            explain (ListingExplanation | None | Unset):
     """

    items: list[RecordEnvelope]
    next_cursor: None | str | Unset = UNSET
    field_shards: None | ShardsSummary | Unset = UNSET
    explain: ListingExplanation | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.listing_explanation import ListingExplanation # noqa: PLC0415
        from ..models.record_envelope import RecordEnvelope # noqa: PLC0415
        from ..models.shards_summary import ShardsSummary # noqa: PLC0415
        items = []
        for items_item_data in self.items:
            items_item = items_item_data.to_dict()
            items.append(items_item)



        next_cursor: None | str | Unset
        if isinstance(self.next_cursor, Unset):
            next_cursor = UNSET
        else:
            next_cursor = self.next_cursor

        field_shards: dict[str, Any] | None | Unset
        if isinstance(self.field_shards, Unset):
            field_shards = UNSET
        elif isinstance(self.field_shards, ShardsSummary):
            field_shards = self.field_shards.to_dict()
        else:
            field_shards = self.field_shards

        explain: dict[str, Any] | None | Unset
        if isinstance(self.explain, Unset):
            explain = UNSET
        elif isinstance(self.explain, ListingExplanation):
            explain = self.explain.to_dict()
        else:
            explain = self.explain


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "items": items,
        })
        if next_cursor is not UNSET:
            field_dict["next_cursor"] = next_cursor
        if field_shards is not UNSET:
            field_dict["_shards"] = field_shards
        if explain is not UNSET:
            field_dict["explain"] = explain

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.listing_explanation import ListingExplanation # noqa: PLC0415
        from ..models.record_envelope import RecordEnvelope # noqa: PLC0415
        from ..models.shards_summary import ShardsSummary # noqa: PLC0415
        d = dict(src_dict)
        items = []
        _items = d.pop("items")
        for items_item_data in (_items):
            items_item = RecordEnvelope.from_dict(items_item_data)



            items.append(items_item)


        def _parse_next_cursor(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        next_cursor = _parse_next_cursor(d.pop("next_cursor", UNSET))


        def _parse_field_shards(data: object) -> None | ShardsSummary | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                field_shards_type_1 = ShardsSummary.from_dict(data)



                return field_shards_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | ShardsSummary | Unset, data)

        field_shards = _parse_field_shards(d.pop("_shards", UNSET))


        def _parse_explain(data: object) -> ListingExplanation | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                explain_type_1 = ListingExplanation.from_dict(data)



                return explain_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ListingExplanation | None | Unset, data)

        explain = _parse_explain(d.pop("explain", UNSET))


        record_page = cls(
            items=items,
            next_cursor=next_cursor,
            field_shards=field_shards,
            explain=explain,
        )


        record_page.additional_properties = d
        return record_page

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
