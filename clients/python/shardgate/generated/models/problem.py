from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.quota_problem import QuotaProblem





T = TypeVar("T", bound="Problem")



@_attrs_define
class Problem:
    """ An RFC 9457 problem document.

        Example:
            {'code': 'record_not_found', 'detail': 'record not found', 'status': 404, 'title': 'Not Found', 'type':
                'about:blank'}

        Attributes:
            type_ (str): Always `about:blank`: the `code` identifies the problem.
            title (str): The HTTP reason phrase.
            status (int): The HTTP status.
            code (str): Stable machine-readable code, e.g. `record_not_found`.
            detail (str): Human-readable explanation.
            trace_id (None | str | Unset): The trace of the request (32 hex digits, W3C), when traces are on: quote it to
                find the
                request's spans and log lines. Example: 4bf92f3577b34da6a3ce929d0e0e4736.
            quota (None | QuotaProblem | Unset):
     """

    type_: str
    title: str
    status: int
    code: str
    detail: str
    trace_id: None | str | Unset = UNSET
    quota: None | QuotaProblem | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        from ..models.quota_problem import QuotaProblem # noqa: PLC0415
        type_ = self.type_

        title = self.title

        status = self.status

        code = self.code

        detail = self.detail

        trace_id: None | str | Unset
        if isinstance(self.trace_id, Unset):
            trace_id = UNSET
        else:
            trace_id = self.trace_id

        quota: dict[str, Any] | None | Unset
        if isinstance(self.quota, Unset):
            quota = UNSET
        elif isinstance(self.quota, QuotaProblem):
            quota = self.quota.to_dict()
        else:
            quota = self.quota


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "type": type_,
            "title": title,
            "status": status,
            "code": code,
            "detail": detail,
        })
        if trace_id is not UNSET:
            field_dict["trace_id"] = trace_id
        if quota is not UNSET:
            field_dict["quota"] = quota

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.quota_problem import QuotaProblem # noqa: PLC0415
        d = dict(src_dict)
        type_ = d.pop("type")

        title = d.pop("title")

        status = d.pop("status")

        code = d.pop("code")

        detail = d.pop("detail")

        def _parse_trace_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        trace_id = _parse_trace_id(d.pop("trace_id", UNSET))


        def _parse_quota(data: object) -> None | QuotaProblem | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                quota_type_1 = QuotaProblem.from_dict(data)



                return quota_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | QuotaProblem | Unset, data)

        quota = _parse_quota(d.pop("quota", UNSET))


        problem = cls(
            type_=type_,
            title=title,
            status=status,
            code=code,
            detail=detail,
            trace_id=trace_id,
            quota=quota,
        )


        problem.additional_properties = d
        return problem

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
