from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.measures import Measures





T = TypeVar("T", bound="WorkMeasures")



@_attrs_define
class WorkMeasures:
    """ Load by whose work it is.

        Attributes:
            request (Measures): Counts over a span, and the same as rates.
            moves (Measures): Counts over a span, and the same as rates.
            maintenance (Measures): Counts over a span, and the same as rates.
     """

    request: Measures
    moves: Measures
    maintenance: Measures
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.measures import Measures # noqa: PLC0415
        request = self.request.to_dict()

        moves = self.moves.to_dict()

        maintenance = self.maintenance.to_dict()


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "request": request,
            "moves": moves,
            "maintenance": maintenance,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.measures import Measures # noqa: PLC0415
        d = dict(src_dict)
        request = Measures.from_dict(d.pop("request"))




        moves = Measures.from_dict(d.pop("moves"))




        maintenance = Measures.from_dict(d.pop("maintenance"))




        work_measures = cls(
            request=request,
            moves=moves,
            maintenance=maintenance,
        )


        work_measures.additional_properties = d
        return work_measures

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
