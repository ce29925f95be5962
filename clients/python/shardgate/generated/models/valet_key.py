from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.valet_key_method import ValetKeyMethod






T = TypeVar("T", bound="ValetKey")



@_attrs_define
class ValetKey:
    """ An issued valet key.

        Attributes:
            id (str): Grant id (revoke with `DELETE .../valet-keys/{id}`).
            url (str): The signed URL: no other credential is needed. Opaque: use it exactly as issued (its
                query is signed, and a URL taken apart and rebuilt, re-encoded or with a parameter added,
                is refused with 403).
            method (ValetKeyMethod): The method it allows (`GET`, which includes `HEAD`, or `PUT`).
            not_before (str): Valid from, RFC 3339 (a little in the past, for clock skew).
            expires_at (str): Valid until, RFC 3339 (exclusive; no grace).
            key_id (str): The signing key's id.
     """

    id: str
    url: str
    method: ValetKeyMethod
    not_before: str
    expires_at: str
    key_id: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        id = self.id

        url = self.url

        method = self.method.value

        not_before = self.not_before

        expires_at = self.expires_at

        key_id = self.key_id


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "id": id,
            "url": url,
            "method": method,
            "not_before": not_before,
            "expires_at": expires_at,
            "key_id": key_id,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        url = d.pop("url")

        method = ValetKeyMethod(d.pop("method"))




        not_before = d.pop("not_before")

        expires_at = d.pop("expires_at")

        key_id = d.pop("key_id")

        valet_key = cls(
            id=id,
            url=url,
            method=method,
            not_before=not_before,
            expires_at=expires_at,
            key_id=key_id,
        )


        valet_key.additional_properties = d
        return valet_key

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
