from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="MoveRequest")



@_attrs_define
class MoveRequest:
    """ Body of `POST /v1/admin/tenants/{id}/move`.

        Attributes:
            to (str): The shard to move the tenant to (registered and `active`).
     """

    to: str





    def to_dict(self) -> dict[str, Any]:
        to = self.to


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "to": to,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        to = d.pop("to")

        move_request = cls(
            to=to,
        )

        return move_request

