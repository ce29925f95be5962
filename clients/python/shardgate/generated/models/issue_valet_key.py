from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.issue_valet_key_permission import IssueValetKeyPermission
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="IssueValetKey")



@_attrs_define
class IssueValetKey:
    """ Body of `POST /v1/tenants/{tenant}/valet-keys`.

        Attributes:
            path (str): The blob path (as in the blob API, not encoded).
            permission (IssueValetKeyPermission): `read` (GET and HEAD) or `write` (PUT). Example: read.
            expires_in (int | None | Unset): Lifetime in seconds: default 300, at most `valet.max_expires_in`.
            content_type (None | str | Unset): Uploads must declare exactly this `Content-Type` (write only).
            max_size (int | None | Unset): Uploads may be at most this many bytes (write only).
            content_disposition (None | str | Unset): `Content-Disposition` sent with downloads, e.g. `attachment;
                filename="report.pdf"`
                (read only). Give the filename only with `filename`; it is encoded per RFC 6266.
            single_use (bool | Unset): Works for one request only.
     """

    path: str
    permission: IssueValetKeyPermission
    expires_in: int | None | Unset = UNSET
    content_type: None | str | Unset = UNSET
    max_size: int | None | Unset = UNSET
    content_disposition: None | str | Unset = UNSET
    single_use: bool | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        path = self.path

        permission = self.permission.value

        expires_in: int | None | Unset
        if isinstance(self.expires_in, Unset):
            expires_in = UNSET
        else:
            expires_in = self.expires_in

        content_type: None | str | Unset
        if isinstance(self.content_type, Unset):
            content_type = UNSET
        else:
            content_type = self.content_type

        max_size: int | None | Unset
        if isinstance(self.max_size, Unset):
            max_size = UNSET
        else:
            max_size = self.max_size

        content_disposition: None | str | Unset
        if isinstance(self.content_disposition, Unset):
            content_disposition = UNSET
        else:
            content_disposition = self.content_disposition

        single_use = self.single_use


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "path": path,
            "permission": permission,
        })
        if expires_in is not UNSET:
            field_dict["expires_in"] = expires_in
        if content_type is not UNSET:
            field_dict["content_type"] = content_type
        if max_size is not UNSET:
            field_dict["max_size"] = max_size
        if content_disposition is not UNSET:
            field_dict["content_disposition"] = content_disposition
        if single_use is not UNSET:
            field_dict["single_use"] = single_use

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        path = d.pop("path")

        permission = IssueValetKeyPermission(d.pop("permission"))




        def _parse_expires_in(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        expires_in = _parse_expires_in(d.pop("expires_in", UNSET))


        def _parse_content_type(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        content_type = _parse_content_type(d.pop("content_type", UNSET))


        def _parse_max_size(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_size = _parse_max_size(d.pop("max_size", UNSET))


        def _parse_content_disposition(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        content_disposition = _parse_content_disposition(d.pop("content_disposition", UNSET))


        single_use = d.pop("single_use", UNSET)

        issue_valet_key = cls(
            path=path,
            permission=permission,
            expires_in=expires_in,
            content_type=content_type,
            max_size=max_size,
            content_disposition=content_disposition,
            single_use=single_use,
        )

        return issue_valet_key

