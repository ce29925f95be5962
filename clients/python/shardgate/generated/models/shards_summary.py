from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.shard_failure_view import ShardFailureView





T = TypeVar("T", bound="ShardsSummary")



@_attrs_define
class ShardsSummary:
    """ How the shards of a listing answered (as Elasticsearch's `_shards`).

        Attributes:
            total (int): Shards the listing read.
            successful (int): Shards that answered.
            failed (int): Shards that failed, timed out or were offline: their records are missing from the page.
            failures (list[ShardFailureView]): Each failed shard and why.
     """

    total: int
    successful: int
    failed: int
    failures: list[ShardFailureView]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.shard_failure_view import ShardFailureView # noqa: PLC0415
        total = self.total

        successful = self.successful

        failed = self.failed

        failures = []
        for failures_item_data in self.failures:
            failures_item = failures_item_data.to_dict()
            failures.append(failures_item)




        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "total": total,
            "successful": successful,
            "failed": failed,
            "failures": failures,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.shard_failure_view import ShardFailureView # noqa: PLC0415
        d = dict(src_dict)
        total = d.pop("total")

        successful = d.pop("successful")

        failed = d.pop("failed")

        failures = []
        _failures = d.pop("failures")
        for failures_item_data in (_failures):
            failures_item = ShardFailureView.from_dict(failures_item_data)



            failures.append(failures_item)


        shards_summary = cls(
            total=total,
            successful=successful,
            failed=failed,
            failures=failures,
        )


        shards_summary.additional_properties = d
        return shards_summary

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
