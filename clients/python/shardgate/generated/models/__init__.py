""" Contains all the data models used in inputs/outputs """

from .approval import Approval
from .audit_record import AuditRecord
from .audit_request import AuditRequest
from .balancer_mode import BalancerMode
from .balancer_plan import BalancerPlan
from .balancer_run import BalancerRun
from .balancer_settings import BalancerSettings
from .balancer_view import BalancerView
from .blob_info import BlobInfo
from .breaker import Breaker
from .breaker_action import BreakerAction
from .breaker_command import BreakerCommand
from .collection_distribution import CollectionDistribution
from .collection_summary import CollectionSummary
from .component_status import ComponentStatus
from .connections import Connections
from .create_tenant import CreateTenant
from .get_request_health_by import GetRequestHealthBy
from .health import Health
from .heat_map_view import HeatMapView
from .heat_metric import HeatMetric
from .heat_row_view import HeatRowView
from .heat_work import HeatWork
from .index_failure import IndexFailure
from .index_info import IndexInfo
from .index_spec import IndexSpec
from .instance import Instance
from .instance_component import InstanceComponent
from .instance_components import InstanceComponents
from .instance_key_set import InstanceKeySet
from .instance_key_sets import InstanceKeySets
from .instance_state import InstanceState
from .instances import Instances
from .issue_valet_key import IssueValetKey
from .job import Job
from .job_lease_holder import JobLeaseHolder
from .job_progress import JobProgress
from .key_set_readiness import KeySetReadiness
from .key_set_refresh import KeySetRefresh
from .key_set_refreshes import KeySetRefreshes
from .lease_holder import LeaseHolder
from .list_audit_order import ListAuditOrder
from .list_records_consistency import ListRecordsConsistency
from .list_tenants_include import ListTenantsInclude
from .listing_explanation import ListingExplanation
from .load_view import LoadView
from .map_shard import MapShard
from .measures import Measures
from .mode_request import ModeRequest
from .move_kind import MoveKind
from .move_request import MoveRequest
from .page_audit_record import PageAuditRecord
from .page_blob_info import PageBlobInfo
from .page_job import PageJob
from .page_record_envelope import PageRecordEnvelope
from .page_tenant import PageTenant
from .plan_shard import PlanShard
from .planned_load import PlannedLoad
from .planned_move import PlannedMove
from .planned_range_move import PlannedRangeMove
from .planned_tenant_move import PlannedTenantMove
from .planned_vshard_move import PlannedVshardMove
from .point import Point
from .predicted_load import PredictedLoad
from .problem import Problem
from .proposal_state import ProposalState
from .quota_limits import QuotaLimits
from .quota_problem import QuotaProblem
from .quota_source import QuotaSource
from .quota_use import QuotaUse
from .quota_uses import QuotaUses
from .range_view import RangeView
from .rate_limit import RateLimit
from .rates import Rates
from .readiness import Readiness
from .readiness_components import ReadinessComponents
from .readiness_key_sets import ReadinessKeySets
from .rebalance_answer import RebalanceAnswer
from .rebalance_plan import RebalancePlan
from .rebalance_request import RebalanceRequest
from .record_envelope import RecordEnvelope
from .record_page import RecordPage
from .register_shard import RegisterShard
from .request_health_point import RequestHealthPoint
from .request_health_series import RequestHealthSeries
from .request_health_step import RequestHealthStep
from .request_health_view import RequestHealthView
from .route_explanation import RouteExplanation
from .run_outcome import RunOutcome
from .shard import Shard
from .shard_failure_reason import ShardFailureReason
from .shard_failure_view import ShardFailureView
from .shard_list import ShardList
from .shard_load_view import ShardLoadView
from .shard_map_view import ShardMapView
from .shard_usage import ShardUsage
from .shards_summary import ShardsSummary
from .signing_key_info import SigningKeyInfo
from .split_request import SplitRequest
from .tenant import Tenant
from .tenant_collections_view import TenantCollectionsView
from .tenant_holdings import TenantHoldings
from .tenant_load_view import TenantLoadView
from .tenant_quotas import TenantQuotas
from .tenant_usage import TenantUsage
from .tier_quotas import TierQuotas
from .update_shard import UpdateShard
from .update_tenant import UpdateTenant
from .usage_counts import UsageCounts
from .usage_day_line import UsageDayLine
from .usage_report import UsageReport
from .valet_key import ValetKey
from .vshard_load_view import VshardLoadView
from .vshard_range import VshardRange
from .work_measures import WorkMeasures

__all__ = (
    "Approval",
    "AuditRecord",
    "AuditRequest",
    "BalancerMode",
    "BalancerPlan",
    "BalancerRun",
    "BalancerSettings",
    "BalancerView",
    "BlobInfo",
    "Breaker",
    "BreakerAction",
    "BreakerCommand",
    "CollectionDistribution",
    "CollectionSummary",
    "ComponentStatus",
    "Connections",
    "CreateTenant",
    "GetRequestHealthBy",
    "Health",
    "HeatMapView",
    "HeatMetric",
    "HeatRowView",
    "HeatWork",
    "IndexFailure",
    "IndexInfo",
    "IndexSpec",
    "Instance",
    "InstanceComponent",
    "InstanceComponents",
    "InstanceKeySet",
    "InstanceKeySets",
    "Instances",
    "InstanceState",
    "IssueValetKey",
    "Job",
    "JobLeaseHolder",
    "JobProgress",
    "KeySetReadiness",
    "KeySetRefresh",
    "KeySetRefreshes",
    "LeaseHolder",
    "ListAuditOrder",
    "ListingExplanation",
    "ListRecordsConsistency",
    "ListTenantsInclude",
    "LoadView",
    "MapShard",
    "Measures",
    "ModeRequest",
    "MoveKind",
    "MoveRequest",
    "PageAuditRecord",
    "PageBlobInfo",
    "PageJob",
    "PageRecordEnvelope",
    "PageTenant",
    "PlannedLoad",
    "PlannedMove",
    "PlannedRangeMove",
    "PlannedTenantMove",
    "PlannedVshardMove",
    "PlanShard",
    "Point",
    "PredictedLoad",
    "Problem",
    "ProposalState",
    "QuotaLimits",
    "QuotaProblem",
    "QuotaSource",
    "QuotaUse",
    "QuotaUses",
    "RangeView",
    "RateLimit",
    "Rates",
    "Readiness",
    "ReadinessComponents",
    "ReadinessKeySets",
    "RebalanceAnswer",
    "RebalancePlan",
    "RebalanceRequest",
    "RecordEnvelope",
    "RecordPage",
    "RegisterShard",
    "RequestHealthPoint",
    "RequestHealthSeries",
    "RequestHealthStep",
    "RequestHealthView",
    "RouteExplanation",
    "RunOutcome",
    "Shard",
    "ShardFailureReason",
    "ShardFailureView",
    "ShardList",
    "ShardLoadView",
    "ShardMapView",
    "ShardsSummary",
    "ShardUsage",
    "SigningKeyInfo",
    "SplitRequest",
    "Tenant",
    "TenantCollectionsView",
    "TenantHoldings",
    "TenantLoadView",
    "TenantQuotas",
    "TenantUsage",
    "TierQuotas",
    "UpdateShard",
    "UpdateTenant",
    "UsageCounts",
    "UsageDayLine",
    "UsageReport",
    "ValetKey",
    "VshardLoadView",
    "VshardRange",
    "WorkMeasures",
)
