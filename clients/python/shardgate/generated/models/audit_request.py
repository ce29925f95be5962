from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="AuditRequest")



@_attrs_define
class AuditRequest:
    """ Body of `POST /v1/admin/index-audits`.

        Attributes:
            tenant (str): Tenant.
            collection (str): Collection.
            index (str): Index name.
     """

    tenant: str
    collection: str
    index: str





    def to_dict(self) -> dict[str, Any]:
        tenant = self.tenant

        collection = self.collection

        index = self.index


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "tenant": tenant,
            "collection": collection,
            "index": index,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        tenant = d.pop("tenant")

        collection = d.pop("collection")

        index = d.pop("index")

        audit_request = cls(
            tenant=tenant,
            collection=collection,
            index=index,
        )

        return audit_request

