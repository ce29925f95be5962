from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="PageAuditRecordItemsItem")



@_attrs_define
class PageAuditRecordItemsItem:
    """ One recorded admin action.

        Attributes:
            id (int): Increasing id.
            at (str): When, RFC 3339.
            actor (str): The token subject that acted (`system` for start-up bootstrap).
            action (str): What was done, e.g. `tenant.create`, `tenant.update`, `tenant.delete`, `tenant.move`,
                `shard.register`, `shard.state`, `shard.delete`, `shard.bootstrap`,
                `shard.breaker.force_open`, `shard.breaker.reset`, `job.cancel`, `valet.issue`.
            target (str): What it was done to, e.g. `tenant:acme` or `shard:shard-2 read_only`.
            request_id (str): The id of the request that did it: the server's own, as its response's `x-request-id` gave it.
            tenant (None | str | Unset): The tenant concerned, if any.
            client_request_id (None | str | Unset): The `x-request-id` the client sent with that request, if any: the
                client's to choose (it
                may name another request), so it is kept beside the server's id, never instead of it.
            client_address (None | str | Unset): The address of the client that made the request: its TCP peer, or, behind
                proxies listed
                in `trusted_proxies` or a standalone gatekeeper, the client they named. None for actions
                of the system itself (moves, the balancer, start-up).
     """

    id: int
    at: str
    actor: str
    action: str
    target: str
    request_id: str
    tenant: None | str | Unset = UNSET
    client_request_id: None | str | Unset = UNSET
    client_address: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        id = self.id

        at = self.at

        actor = self.actor

        action = self.action

        target = self.target

        request_id = self.request_id

        tenant: None | str | Unset
        if isinstance(self.tenant, Unset):
            tenant = UNSET
        else:
            tenant = self.tenant

        client_request_id: None | str | Unset
        if isinstance(self.client_request_id, Unset):
            client_request_id = UNSET
        else:
            client_request_id = self.client_request_id

        client_address: None | str | Unset
        if isinstance(self.client_address, Unset):
            client_address = UNSET
        else:
            client_address = self.client_address


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "id": id,
            "at": at,
            "actor": actor,
            "action": action,
            "target": target,
            "request_id": request_id,
        })
        if tenant is not UNSET:
            field_dict["tenant"] = tenant
        if client_request_id is not UNSET:
            field_dict["client_request_id"] = client_request_id
        if client_address is not UNSET:
            field_dict["client_address"] = client_address

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        at = d.pop("at")

        actor = d.pop("actor")

        action = d.pop("action")

        target = d.pop("target")

        request_id = d.pop("request_id")

        def _parse_tenant(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        tenant = _parse_tenant(d.pop("tenant", UNSET))


        def _parse_client_request_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        client_request_id = _parse_client_request_id(d.pop("client_request_id", UNSET))


        def _parse_client_address(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        client_address = _parse_client_address(d.pop("client_address", UNSET))


        page_audit_record_items_item = cls(
            id=id,
            at=at,
            actor=actor,
            action=action,
            target=target,
            request_id=request_id,
            tenant=tenant,
            client_request_id=client_request_id,
            client_address=client_address,
        )


        page_audit_record_items_item.additional_properties = d
        return page_audit_record_items_item

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
