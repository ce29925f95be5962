from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.shard_state import ShardState
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.breaker import Breaker
  from ..models.connections import Connections





T = TypeVar("T", bound="Shard")



@_attrs_define
class Shard:
    """ A registered shard with statistics. Its URL is never shown.

        Attributes:
            id (str): Shard id.
            engine (str): `sqlite` or `postgres`.
            state (ShardState): `active`, `read_only` or `offline`. Example: active.
            vshards (int): vshards it owns.
            tenants (int): Tenants whose home it is.
            pinned_tenants (int): Tenants pinned to it.
            created_at (str): Registration time, RFC 3339.
            updated_at (str): Last state change, RFC 3339.
            records (int | None | Unset): Live records of the tenants whose home it is; `null` when they cannot be counted
                (offline or unreachable). A tenant is counted where the catalog places it: the copy a
                move makes before its switch, and the old copy it leaves until its clean-up, are not
                counted, so a sum over the shards counts each tenant once.
            bytes_ (int | None | Unset): Its database's size on disk in bytes (PostgreSQL's `pg_database_size`, which counts
                the
                database's own catalogs: several MiB when empty; SQLite's pages); `null` when it cannot
                be measured.
            data_bytes (int | None | Unset): The size of its data in bytes: its tables with their indexes (PostgreSQL's
                `pg_total_relation_size` of each; SQLite's pages in use), part of `bytes`. A moved
                tenant's old copy counts here until its clean-up. `null` when it cannot be measured.
            breaker (Breaker | None | Unset):
            connections (Connections | None | Unset):
            problem (None | str | Unset): Why the instance that answered does not use the shard, if it does not: its
                database
                carries another shard's identity marker (requests for it get 503 `shard_unavailable`).
                `null` normally.
     """

    id: str
    engine: str
    state: ShardState
    vshards: int
    tenants: int
    pinned_tenants: int
    created_at: str
    updated_at: str
    records: int | None | Unset = UNSET
    bytes_: int | None | Unset = UNSET
    data_bytes: int | None | Unset = UNSET
    breaker: Breaker | None | Unset = UNSET
    connections: Connections | None | Unset = UNSET
    problem: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.breaker import Breaker # noqa: PLC0415
        from ..models.connections import Connections # noqa: PLC0415
        id = self.id

        engine = self.engine

        state = self.state.value

        vshards = self.vshards

        tenants = self.tenants

        pinned_tenants = self.pinned_tenants

        created_at = self.created_at

        updated_at = self.updated_at

        records: int | None | Unset
        if isinstance(self.records, Unset):
            records = UNSET
        else:
            records = self.records

        bytes_: int | None | Unset
        if isinstance(self.bytes_, Unset):
            bytes_ = UNSET
        else:
            bytes_ = self.bytes_

        data_bytes: int | None | Unset
        if isinstance(self.data_bytes, Unset):
            data_bytes = UNSET
        else:
            data_bytes = self.data_bytes

        breaker: dict[str, Any] | None | Unset
        if isinstance(self.breaker, Unset):
            breaker = UNSET
        elif isinstance(self.breaker, Breaker):
            breaker = self.breaker.to_dict()
        else:
            breaker = self.breaker

        connections: dict[str, Any] | None | Unset
        if isinstance(self.connections, Unset):
            connections = UNSET
        elif isinstance(self.connections, Connections):
            connections = self.connections.to_dict()
        else:
            connections = self.connections

        problem: None | str | Unset
        if isinstance(self.problem, Unset):
            problem = UNSET
        else:
            problem = self.problem


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "id": id,
            "engine": engine,
            "state": state,
            "vshards": vshards,
            "tenants": tenants,
            "pinned_tenants": pinned_tenants,
            "created_at": created_at,
            "updated_at": updated_at,
        })
        if records is not UNSET:
            field_dict["records"] = records
        if bytes_ is not UNSET:
            field_dict["bytes"] = bytes_
        if data_bytes is not UNSET:
            field_dict["data_bytes"] = data_bytes
        if breaker is not UNSET:
            field_dict["breaker"] = breaker
        if connections is not UNSET:
            field_dict["connections"] = connections
        if problem is not UNSET:
            field_dict["problem"] = problem

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.breaker import Breaker # noqa: PLC0415
        from ..models.connections import Connections # noqa: PLC0415
        d = dict(src_dict)
        id = d.pop("id")

        engine = d.pop("engine")

        state = ShardState(d.pop("state"))




        vshards = d.pop("vshards")

        tenants = d.pop("tenants")

        pinned_tenants = d.pop("pinned_tenants")

        created_at = d.pop("created_at")

        updated_at = d.pop("updated_at")

        def _parse_records(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        records = _parse_records(d.pop("records", UNSET))


        def _parse_bytes_(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        bytes_ = _parse_bytes_(d.pop("bytes", UNSET))


        def _parse_data_bytes(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        data_bytes = _parse_data_bytes(d.pop("data_bytes", UNSET))


        def _parse_breaker(data: object) -> Breaker | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                breaker_type_1 = Breaker.from_dict(data)



                return breaker_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Breaker | None | Unset, data)

        breaker = _parse_breaker(d.pop("breaker", UNSET))


        def _parse_connections(data: object) -> Connections | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                connections_type_1 = Connections.from_dict(data)



                return connections_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Connections | None | Unset, data)

        connections = _parse_connections(d.pop("connections", UNSET))


        def _parse_problem(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        problem = _parse_problem(d.pop("problem", UNSET))


        shard = cls(
            id=id,
            engine=engine,
            state=state,
            vshards=vshards,
            tenants=tenants,
            pinned_tenants=pinned_tenants,
            created_at=created_at,
            updated_at=updated_at,
            records=records,
            bytes_=bytes_,
            data_bytes=data_bytes,
            breaker=breaker,
            connections=connections,
            problem=problem,
        )


        shard.additional_properties = d
        return shard

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
