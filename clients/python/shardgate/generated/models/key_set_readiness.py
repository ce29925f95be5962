from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="KeySetReadiness")



@_attrs_define
class KeySetReadiness:
    """ One issuer's fetched key set. The instance is not ready while an issuer has no key set yet
    (`unavailable`: none of its tokens could be verified, and other instances may have theirs);
    a set past its maximum age (`expired`) does not make it unready, since every instance is
    in the same state when the provider is down, and the other issuers' tokens still work.

        Attributes:
            status (str): `up` (a set younger than the issuer's `jwks_max_age_secs` is in use), `unavailable` (no
                set fetched yet; tokens get 401 `key_set_unavailable`) or `expired` (tokens get 401
                `key_set_expired`).
            url (str): The configured URL the keys come from (`jwks_url`, or the discovery document).
            age_secs (int | None | Unset): Seconds since the set in use was fetched; absent before a first set.
            last_error (None | str | Unset): Why the last fetch failed; absent when it succeeded.
     """

    status: str
    url: str
    age_secs: int | None | Unset = UNSET
    last_error: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        status = self.status

        url = self.url

        age_secs: int | None | Unset
        if isinstance(self.age_secs, Unset):
            age_secs = UNSET
        else:
            age_secs = self.age_secs

        last_error: None | str | Unset
        if isinstance(self.last_error, Unset):
            last_error = UNSET
        else:
            last_error = self.last_error


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "status": status,
            "url": url,
        })
        if age_secs is not UNSET:
            field_dict["age_secs"] = age_secs
        if last_error is not UNSET:
            field_dict["last_error"] = last_error

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        status = d.pop("status")

        url = d.pop("url")

        def _parse_age_secs(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        age_secs = _parse_age_secs(d.pop("age_secs", UNSET))


        def _parse_last_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        last_error = _parse_last_error(d.pop("last_error", UNSET))


        key_set_readiness = cls(
            status=status,
            url=url,
            age_secs=age_secs,
            last_error=last_error,
        )


        key_set_readiness.additional_properties = d
        return key_set_readiness

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
