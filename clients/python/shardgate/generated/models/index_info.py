from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.index_info_layout import IndexInfoLayout
from ..models.index_info_state import IndexInfoState
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.index_failure import IndexFailure





T = TypeVar("T", bound="IndexInfo")



@_attrs_define
class IndexInfo:
    """ An index as the API shows it.

        Attributes:
            name (str): Index name.
            fields (list[str]): Indexed fields (JSON pointers), in order.
            unique (bool): Whether values are unique.
            layout (IndexInfoLayout): `normalized`, `covering` or `full`.
            include (list[str]): Copied fields of a covering index.
            state (IndexInfoState): `building` (backfill running; look-ups get 409 `index_building`), `active`, or `failed`
                (the build failed, see `failure`; look-ups get 409 `index_failed`).
            created_at (str): Creation time, RFC 3339.
            failure (IndexFailure | None | Unset):
            job (None | str | Unset): The backfill job (see `/v1/admin/jobs/{id}`).
     """

    name: str
    fields: list[str]
    unique: bool
    layout: IndexInfoLayout
    include: list[str]
    state: IndexInfoState
    created_at: str
    failure: IndexFailure | None | Unset = UNSET
    job: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.index_failure import IndexFailure # noqa: PLC0415
        name = self.name

        fields = self.fields



        unique = self.unique

        layout = self.layout.value

        include = self.include



        state = self.state.value

        created_at = self.created_at

        failure: dict[str, Any] | None | Unset
        if isinstance(self.failure, Unset):
            failure = UNSET
        elif isinstance(self.failure, IndexFailure):
            failure = self.failure.to_dict()
        else:
            failure = self.failure

        job: None | str | Unset
        if isinstance(self.job, Unset):
            job = UNSET
        else:
            job = self.job


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "name": name,
            "fields": fields,
            "unique": unique,
            "layout": layout,
            "include": include,
            "state": state,
            "created_at": created_at,
        })
        if failure is not UNSET:
            field_dict["failure"] = failure
        if job is not UNSET:
            field_dict["job"] = job

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.index_failure import IndexFailure # noqa: PLC0415
        d = dict(src_dict)
        name = d.pop("name")

        fields = cast(list[str], d.pop("fields"))


        unique = d.pop("unique")

        layout = IndexInfoLayout(d.pop("layout"))




        include = cast(list[str], d.pop("include"))


        state = IndexInfoState(d.pop("state"))




        created_at = d.pop("created_at")

        def _parse_failure(data: object) -> IndexFailure | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                failure_type_1 = IndexFailure.from_dict(data)



                return failure_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(IndexFailure | None | Unset, data)

        failure = _parse_failure(d.pop("failure", UNSET))


        def _parse_job(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        job = _parse_job(d.pop("job", UNSET))


        index_info = cls(
            name=name,
            fields=fields,
            unique=unique,
            layout=layout,
            include=include,
            state=state,
            created_at=created_at,
            failure=failure,
            job=job,
        )


        index_info.additional_properties = d
        return index_info

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
