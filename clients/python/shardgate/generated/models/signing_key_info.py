from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.signing_key_info_state import SigningKeyInfoState
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="SigningKeyInfo")



@_attrs_define
class SigningKeyInfo:
    """ A signing key (never its secret).

        Attributes:
            id (str): Key id.
            state (SigningKeyInfoState): `current` (signs new keys), `active` (still verifies) or `retired` (verifies
                nothing).
            created_at (str): Creation time, RFC 3339.
            retired_at (None | str | Unset): Retirement time, RFC 3339.
     """

    id: str
    state: SigningKeyInfoState
    created_at: str
    retired_at: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        id = self.id

        state = self.state.value

        created_at = self.created_at

        retired_at: None | str | Unset
        if isinstance(self.retired_at, Unset):
            retired_at = UNSET
        else:
            retired_at = self.retired_at


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "id": id,
            "state": state,
            "created_at": created_at,
        })
        if retired_at is not UNSET:
            field_dict["retired_at"] = retired_at

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        state = SigningKeyInfoState(d.pop("state"))




        created_at = d.pop("created_at")

        def _parse_retired_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        retired_at = _parse_retired_at(d.pop("retired_at", UNSET))


        signing_key_info = cls(
            id=id,
            state=state,
            created_at=created_at,
            retired_at=retired_at,
        )


        signing_key_info.additional_properties = d
        return signing_key_info

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
