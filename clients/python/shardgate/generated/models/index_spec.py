from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.index_spec_layout_type_1 import IndexSpecLayoutType1
from ..models.index_spec_layout_type_2_type_1 import IndexSpecLayoutType2Type1
from ..models.index_spec_layout_type_3_type_1 import IndexSpecLayoutType3Type1
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="IndexSpec")



@_attrs_define
class IndexSpec:
    """ Body of `PUT .../indexes/{index}`.

        Attributes:
            field (None | str | Unset): The indexed field, a JSON pointer such as `/email` (or use `fields`).
            fields (list[str] | None | Unset): Several fields, in order, for a composite index (1 to 4).
            unique (bool | Unset): At most one record per value (409 `unique_violation` for a second). Default false.
            layout (IndexSpecLayoutType1 | IndexSpecLayoutType2Type1 | IndexSpecLayoutType3Type1 | None | Unset):
                `normalized` (a reference to the record; default), `covering` (plus copies of `include`)
                or `full` (plus a copy of the record).
            include (list[str] | None | Unset): The fields a covering index copies.
     """

    field: None | str | Unset = UNSET
    fields: list[str] | None | Unset = UNSET
    unique: bool | Unset = UNSET
    layout: IndexSpecLayoutType1 | IndexSpecLayoutType2Type1 | IndexSpecLayoutType3Type1 | None | Unset = UNSET
    include: list[str] | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        field: None | str | Unset
        if isinstance(self.field, Unset):
            field = UNSET
        else:
            field = self.field

        fields: list[str] | None | Unset
        if isinstance(self.fields, Unset):
            fields = UNSET
        elif isinstance(self.fields, list):
            fields = self.fields


        else:
            fields = self.fields

        unique = self.unique

        layout: None | str | Unset
        if isinstance(self.layout, Unset):
            layout = UNSET
        elif isinstance(self.layout, IndexSpecLayoutType1):
            layout = self.layout.value
        elif isinstance(self.layout, IndexSpecLayoutType2Type1):
            layout = self.layout.value
        elif isinstance(self.layout, IndexSpecLayoutType3Type1):
            layout = self.layout.value
        else:
            layout = self.layout

        include: list[str] | None | Unset
        if isinstance(self.include, Unset):
            include = UNSET
        elif isinstance(self.include, list):
            include = self.include


        else:
            include = self.include


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if field is not UNSET:
            field_dict["field"] = field
        if fields is not UNSET:
            field_dict["fields"] = fields
        if unique is not UNSET:
            field_dict["unique"] = unique
        if layout is not UNSET:
            field_dict["layout"] = layout
        if include is not UNSET:
            field_dict["include"] = include

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        def _parse_field(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        field = _parse_field(d.pop("field", UNSET))


        def _parse_fields(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                fields_type_0 = cast(list[str], data)

                return fields_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        fields = _parse_fields(d.pop("fields", UNSET))


        unique = d.pop("unique", UNSET)

        def _parse_layout(data: object) -> IndexSpecLayoutType1 | IndexSpecLayoutType2Type1 | IndexSpecLayoutType3Type1 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                layout_type_1 = IndexSpecLayoutType1(data)



                return layout_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, str):
                    raise TypeError()
                layout_type_2_type_1 = IndexSpecLayoutType2Type1(data)



                return layout_type_2_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, str):
                    raise TypeError()
                layout_type_3_type_1 = IndexSpecLayoutType3Type1(data)



                return layout_type_3_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(IndexSpecLayoutType1 | IndexSpecLayoutType2Type1 | IndexSpecLayoutType3Type1 | None | Unset, data)

        layout = _parse_layout(d.pop("layout", UNSET))


        def _parse_include(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                include_type_0 = cast(list[str], data)

                return include_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        include = _parse_include(d.pop("include", UNSET))


        index_spec = cls(
            field=field,
            fields=fields,
            unique=unique,
            layout=layout,
            include=include,
        )

        return index_spec

