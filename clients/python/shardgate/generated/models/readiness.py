from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.readiness_components import ReadinessComponents
  from ..models.readiness_key_sets import ReadinessKeySets





T = TypeVar("T", bound="Readiness")



@_attrs_define
class Readiness:
    """ Readiness of the instance and each dependency.

        Attributes:
            status (str): `ready` or `not_ready`.
            components (ReadinessComponents): `catalog`, `cache`, `rate_limits` and one entry per shard id.
            key_sets (ReadinessKeySets | Unset): The key set of each issuer whose keys are fetched from its identity
                provider
                (`jwks_url` or discovery), by issuer; absent when there is none.
     """

    status: str
    components: ReadinessComponents
    key_sets: ReadinessKeySets | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.readiness_components import ReadinessComponents # noqa: PLC0415
        from ..models.readiness_key_sets import ReadinessKeySets # noqa: PLC0415
        status = self.status

        components = self.components.to_dict()

        key_sets: dict[str, Any] | Unset = UNSET
        if not isinstance(self.key_sets, Unset):
            key_sets = self.key_sets.to_dict()


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "status": status,
            "components": components,
        })
        if key_sets is not UNSET:
            field_dict["key_sets"] = key_sets

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.readiness_components import ReadinessComponents # noqa: PLC0415
        from ..models.readiness_key_sets import ReadinessKeySets # noqa: PLC0415
        d = dict(src_dict)
        status = d.pop("status")

        components = ReadinessComponents.from_dict(d.pop("components"))




        _key_sets = d.pop("key_sets", UNSET)
        key_sets: ReadinessKeySets | Unset
        if isinstance(_key_sets,  Unset):
            key_sets = UNSET
        else:
            key_sets = ReadinessKeySets.from_dict(_key_sets)




        readiness = cls(
            status=status,
            components=components,
            key_sets=key_sets,
        )


        readiness.additional_properties = d
        return readiness

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
