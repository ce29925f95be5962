from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="RegisterShard")



@_attrs_define
class RegisterShard:
    """ Body of `POST /v1/admin/shards`.

        Attributes:
            id (str): Shard id: `[a-z0-9][a-z0-9-]{0,62}`. Example: shard-4.
            url (str): `postgres://user:password@host/db`, or `sqlite://path` when the catalog is SQLite (never
                an in-memory SQLite database: 422 `unsafe_shard_url`). The database must not be another
                shard already (409 `shard_database_claimed`). Stored in the catalog, never returned. Example:
                postgres://shardgate@db-4.internal/shard4.
     """

    id: str
    url: str





    def to_dict(self) -> dict[str, Any]:
        id = self.id

        url = self.url


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "id": id,
            "url": url,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        url = d.pop("url")

        register_shard = cls(
            id=id,
            url=url,
        )

        return register_shard

