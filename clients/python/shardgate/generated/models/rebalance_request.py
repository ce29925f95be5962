from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="RebalanceRequest")



@_attrs_define
class RebalanceRequest:
    """ Body of `POST /v1/admin/vshards/rebalance` and `POST /v1/admin/shards/{id}/drain`.

        Attributes:
            dry_run (bool | Unset): Only compute and return the plan; move nothing (default `false`).
            balance (None | str | Unset): `count` (default): every active shard ends with the same number of vshards, give
                or take
                one, moving no more vshards than that needs. `bytes`: balance the stored bytes (live
                record values and blobs) greedily, without moving a vshard twice. Example: count.
            parallel (int | None | Unset): How many moves run at once, 1 to 16 (default 2).
     """

    dry_run: bool | Unset = UNSET
    balance: None | str | Unset = UNSET
    parallel: int | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        dry_run = self.dry_run

        balance: None | str | Unset
        if isinstance(self.balance, Unset):
            balance = UNSET
        else:
            balance = self.balance

        parallel: int | None | Unset
        if isinstance(self.parallel, Unset):
            parallel = UNSET
        else:
            parallel = self.parallel


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if dry_run is not UNSET:
            field_dict["dry_run"] = dry_run
        if balance is not UNSET:
            field_dict["balance"] = balance
        if parallel is not UNSET:
            field_dict["parallel"] = parallel

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        dry_run = d.pop("dry_run", UNSET)

        def _parse_balance(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        balance = _parse_balance(d.pop("balance", UNSET))


        def _parse_parallel(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        parallel = _parse_parallel(d.pop("parallel", UNSET))


        rebalance_request = cls(
            dry_run=dry_run,
            balance=balance,
            parallel=parallel,
        )

        return rebalance_request

