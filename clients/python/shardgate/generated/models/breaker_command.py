from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.breaker_action import BreakerAction
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="BreakerCommand")



@_attrs_define
class BreakerCommand:
    """ Body of `POST /v1/admin/shards/{id}/breaker`.

        Attributes:
            action (BreakerAction): What to do with a shard's circuit breaker (`POST /v1/admin/shards/{id}/breaker`).
            reason (None | str | Unset): Why (kept in the audit log and shown as the breaker's reason); at most 200
                characters.
     """

    action: BreakerAction
    reason: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        action = self.action.value

        reason: None | str | Unset
        if isinstance(self.reason, Unset):
            reason = UNSET
        else:
            reason = self.reason


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "action": action,
        })
        if reason is not UNSET:
            field_dict["reason"] = reason

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        action = BreakerAction(d.pop("action"))




        def _parse_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        reason = _parse_reason(d.pop("reason", UNSET))


        breaker_command = cls(
            action=action,
            reason=reason,
        )

        return breaker_command

