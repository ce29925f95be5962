from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.update_shard_state_type_1 import UpdateShardStateType1
from ..models.update_shard_state_type_2_type_1 import UpdateShardStateType2Type1
from ..models.update_shard_state_type_3_type_1 import UpdateShardStateType3Type1
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="UpdateShard")



@_attrs_define
class UpdateShard:
    """ Body of `PATCH /v1/admin/shards/{id}`: a new state, a new URL, or both (the URL is changed
    first).

        Attributes:
            state (None | Unset | UpdateShardStateType1 | UpdateShardStateType2Type1 | UpdateShardStateType3Type1): New
                state. Example: read_only.
            url (None | str | Unset): New URL of the shard's database: the same database reached another way (a rotated
                password, another host name, other TLS parameters). Checked as a registration checks
                one (the same engine, TLS as it asks: 422 `shard_tls_failed`; reachable: 422
                `shard_unreachable`), and the database must carry this shard's identity marker (409
                `shard_identity_mismatch` otherwise). Stored in the catalog, never returned or logged;
                the audit log keeps it without password or query. Example: postgres://shardgate:new-
                password@db-4.internal/shard4.
     """

    state: None | Unset | UpdateShardStateType1 | UpdateShardStateType2Type1 | UpdateShardStateType3Type1 = UNSET
    url: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        state: None | str | Unset
        if isinstance(self.state, Unset):
            state = UNSET
        elif isinstance(self.state, UpdateShardStateType1):
            state = self.state.value
        elif isinstance(self.state, UpdateShardStateType2Type1):
            state = self.state.value
        elif isinstance(self.state, UpdateShardStateType3Type1):
            state = self.state.value
        else:
            state = self.state

        url: None | str | Unset
        if isinstance(self.url, Unset):
            url = UNSET
        else:
            url = self.url


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if state is not UNSET:
            field_dict["state"] = state
        if url is not UNSET:
            field_dict["url"] = url

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        def _parse_state(data: object) -> None | Unset | UpdateShardStateType1 | UpdateShardStateType2Type1 | UpdateShardStateType3Type1:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                state_type_1 = UpdateShardStateType1(data)



                return state_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, str):
                    raise TypeError()
                state_type_2_type_1 = UpdateShardStateType2Type1(data)



                return state_type_2_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, str):
                    raise TypeError()
                state_type_3_type_1 = UpdateShardStateType3Type1(data)



                return state_type_3_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UpdateShardStateType1 | UpdateShardStateType2Type1 | UpdateShardStateType3Type1, data)

        state = _parse_state(d.pop("state", UNSET))


        def _parse_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        url = _parse_url(d.pop("url", UNSET))


        update_shard = cls(
            state=state,
            url=url,
        )

        return update_shard

