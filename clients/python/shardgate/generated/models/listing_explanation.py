from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.listing_explanation_distribution import ListingExplanationDistribution
from typing import cast






T = TypeVar("T", bound="ListingExplanation")



@_attrs_define
class ListingExplanation:
    """ The shards a listing reads.

        Attributes:
            distribution (ListingExplanationDistribution): The collection's distribution: `tenant`, `hash` or `range`.
                Example: hash.
            shards (list[str]): The physical shards it reads, each once.
            epoch (int): The map epoch the plan was made on.
     """

    distribution: ListingExplanationDistribution
    shards: list[str]
    epoch: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        distribution = self.distribution.value

        shards = self.shards



        epoch = self.epoch


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "distribution": distribution,
            "shards": shards,
            "epoch": epoch,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        distribution = ListingExplanationDistribution(d.pop("distribution"))




        shards = cast(list[str], d.pop("shards"))


        epoch = d.pop("epoch")

        listing_explanation = cls(
            distribution=distribution,
            shards=shards,
            epoch=epoch,
        )


        listing_explanation.additional_properties = d
        return listing_explanation

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
