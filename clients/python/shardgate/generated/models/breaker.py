from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="Breaker")



@_attrs_define
class Breaker:
    """ A shard database's circuit breaker and bulkhead, as one instance sees them.

        Attributes:
            state (str): `closed` (requests run), `open` (they fail at once with 503 `shard_unavailable`; probes
                run), `half_open` (one trial request at a time) or `forced_open` (by an operator, until
                reset). Example: closed.
            opens (int): How many times it opened since the instance started.
            in_progress (int): Statements in progress on the database (running or waiting for a connection).
            refused (int): Statements refused by the open breaker since the instance started.
            shed (int): Statements refused because too many were in progress (503 `shard_busy`).
            retries (int): Reads retried on another connection since the instance started.
            reason (None | str | Unset): Why it opened, while it is not closed.
     """

    state: str
    opens: int
    in_progress: int
    refused: int
    shed: int
    retries: int
    reason: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        state = self.state

        opens = self.opens

        in_progress = self.in_progress

        refused = self.refused

        shed = self.shed

        retries = self.retries

        reason: None | str | Unset
        if isinstance(self.reason, Unset):
            reason = UNSET
        else:
            reason = self.reason


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "state": state,
            "opens": opens,
            "in_progress": in_progress,
            "refused": refused,
            "shed": shed,
            "retries": retries,
        })
        if reason is not UNSET:
            field_dict["reason"] = reason

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        state = d.pop("state")

        opens = d.pop("opens")

        in_progress = d.pop("in_progress")

        refused = d.pop("refused")

        shed = d.pop("shed")

        retries = d.pop("retries")

        def _parse_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        reason = _parse_reason(d.pop("reason", UNSET))


        breaker = cls(
            state=state,
            opens=opens,
            in_progress=in_progress,
            refused=refused,
            shed=shed,
            retries=retries,
            reason=reason,
        )


        breaker.additional_properties = d
        return breaker

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
