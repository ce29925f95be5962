from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.move_kind import MoveKind
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.predicted_load import PredictedLoad





T = TypeVar("T", bound="PlannedMove")



@_attrs_define
class PlannedMove:
    """ The move the plan chose.

        Attributes:
            kind (MoveKind): What kind of thing a move moves.
            from_ (str): From.
            to (str): To.
            statement_ms_per_s (float): The request load it carries (ms/s).
            predicted (list[PredictedLoad]): Every shard's predicted load after it.
            vshard (int | None | Unset): The vshard (kind `vshard`).
            tenant (None | str | Unset): The tenant (kind `tenant`).
     """

    kind: MoveKind
    from_: str
    to: str
    statement_ms_per_s: float
    predicted: list[PredictedLoad]
    vshard: int | None | Unset = UNSET
    tenant: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.predicted_load import PredictedLoad # noqa: PLC0415
        kind = self.kind.value

        from_ = self.from_

        to = self.to

        statement_ms_per_s = self.statement_ms_per_s

        predicted = []
        for predicted_item_data in self.predicted:
            predicted_item = predicted_item_data.to_dict()
            predicted.append(predicted_item)



        vshard: int | None | Unset
        if isinstance(self.vshard, Unset):
            vshard = UNSET
        else:
            vshard = self.vshard

        tenant: None | str | Unset
        if isinstance(self.tenant, Unset):
            tenant = UNSET
        else:
            tenant = self.tenant


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "kind": kind,
            "from": from_,
            "to": to,
            "statement_ms_per_s": statement_ms_per_s,
            "predicted": predicted,
        })
        if vshard is not UNSET:
            field_dict["vshard"] = vshard
        if tenant is not UNSET:
            field_dict["tenant"] = tenant

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.predicted_load import PredictedLoad # noqa: PLC0415
        d = dict(src_dict)
        kind = MoveKind(d.pop("kind"))




        from_ = d.pop("from")

        to = d.pop("to")

        statement_ms_per_s = d.pop("statement_ms_per_s")

        predicted = []
        _predicted = d.pop("predicted")
        for predicted_item_data in (_predicted):
            predicted_item = PredictedLoad.from_dict(predicted_item_data)



            predicted.append(predicted_item)


        def _parse_vshard(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        vshard = _parse_vshard(d.pop("vshard", UNSET))


        def _parse_tenant(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        tenant = _parse_tenant(d.pop("tenant", UNSET))


        planned_move = cls(
            kind=kind,
            from_=from_,
            to=to,
            statement_ms_per_s=statement_ms_per_s,
            predicted=predicted,
            vshard=vshard,
            tenant=tenant,
        )


        planned_move.additional_properties = d
        return planned_move

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
