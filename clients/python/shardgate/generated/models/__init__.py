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
from .collection_distribution_distribution import CollectionDistributionDistribution
from .collection_summary import CollectionSummary
from .collection_summary_distribution import CollectionSummaryDistribution
from .component_status import ComponentStatus
from .connections import Connections
from .create_tenant import CreateTenant
from .create_tenant_tier_type_1 import CreateTenantTierType1
from .create_tenant_tier_type_2_type_1 import CreateTenantTierType2Type1
from .create_tenant_tier_type_3_type_1 import CreateTenantTierType3Type1
from .get_request_health_by import GetRequestHealthBy
from .health import Health
from .heat_map_view import HeatMapView
from .heat_metric import HeatMetric
from .heat_row_view import HeatRowView
from .heat_work import HeatWork
from .index_failure import IndexFailure
from .index_info import IndexInfo
from .index_info_layout import IndexInfoLayout
from .index_info_state import IndexInfoState
from .index_spec import IndexSpec
from .index_spec_layout_type_1 import IndexSpecLayoutType1
from .index_spec_layout_type_2_type_1 import IndexSpecLayoutType2Type1
from .index_spec_layout_type_3_type_1 import IndexSpecLayoutType3Type1
from .instance import Instance
from .instance_component import InstanceComponent
from .instance_components import InstanceComponents
from .instance_key_set import InstanceKeySet
from .instance_key_sets import InstanceKeySets
from .instance_state import InstanceState
from .instances import Instances
from .issue_valet_key import IssueValetKey
from .issue_valet_key_permission import IssueValetKeyPermission
from .job import Job
from .job_kind import JobKind
from .job_lease_holder import JobLeaseHolder
from .job_lease_holder_kind import JobLeaseHolderKind
from .job_progress import JobProgress
from .job_state import JobState
from .key_set_readiness import KeySetReadiness
from .key_set_refresh import KeySetRefresh
from .key_set_refreshes import KeySetRefreshes
from .lease_holder import LeaseHolder
from .list_audit_order import ListAuditOrder
from .list_records_consistency import ListRecordsConsistency
from .list_tenants_include import ListTenantsInclude
from .listing_explanation import ListingExplanation
from .listing_explanation_distribution import ListingExplanationDistribution
from .load_view import LoadView
from .map_shard import MapShard
from .map_shard_state import MapShardState
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
from .planned_load_state import PlannedLoadState
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
from .route_explanation_distribution import RouteExplanationDistribution
from .route_explanation_strategy import RouteExplanationStrategy
from .run_outcome import RunOutcome
from .shard import Shard
from .shard_failure_reason import ShardFailureReason
from .shard_failure_view import ShardFailureView
from .shard_list import ShardList
from .shard_load_view import ShardLoadView
from .shard_map_view import ShardMapView
from .shard_state import ShardState
from .shard_usage import ShardUsage
from .shards_summary import ShardsSummary
from .signing_key_info import SigningKeyInfo
from .signing_key_info_state import SigningKeyInfoState
from .split_request import SplitRequest
from .tenant import Tenant
from .tenant_collections_view import TenantCollectionsView
from .tenant_holdings import TenantHoldings
from .tenant_load_view import TenantLoadView
from .tenant_quotas import TenantQuotas
from .tenant_tier import TenantTier
from .tenant_usage import TenantUsage
from .tier_quotas import TierQuotas
from .tier_quotas_tier import TierQuotasTier
from .update_shard import UpdateShard
from .update_shard_state_type_1 import UpdateShardStateType1
from .update_shard_state_type_2_type_1 import UpdateShardStateType2Type1
from .update_shard_state_type_3_type_1 import UpdateShardStateType3Type1
from .update_tenant import UpdateTenant
from .update_tenant_tier_type_1 import UpdateTenantTierType1
from .update_tenant_tier_type_2_type_1 import UpdateTenantTierType2Type1
from .update_tenant_tier_type_3_type_1 import UpdateTenantTierType3Type1
from .usage_counts import UsageCounts
from .usage_day_line import UsageDayLine
from .usage_report import UsageReport
from .valet_key import ValetKey
from .valet_key_method import ValetKeyMethod
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
    "CollectionDistributionDistribution",
    "CollectionSummary",
    "CollectionSummaryDistribution",
    "ComponentStatus",
    "Connections",
    "CreateTenant",
    "CreateTenantTierType1",
    "CreateTenantTierType2Type1",
    "CreateTenantTierType3Type1",
    "GetRequestHealthBy",
    "Health",
    "HeatMapView",
    "HeatMetric",
    "HeatRowView",
    "HeatWork",
    "IndexFailure",
    "IndexInfo",
    "IndexInfoLayout",
    "IndexInfoState",
    "IndexSpec",
    "IndexSpecLayoutType1",
    "IndexSpecLayoutType2Type1",
    "IndexSpecLayoutType3Type1",
    "Instance",
    "InstanceComponent",
    "InstanceComponents",
    "InstanceKeySet",
    "InstanceKeySets",
    "Instances",
    "InstanceState",
    "IssueValetKey",
    "IssueValetKeyPermission",
    "Job",
    "JobKind",
    "JobLeaseHolder",
    "JobLeaseHolderKind",
    "JobProgress",
    "JobState",
    "KeySetReadiness",
    "KeySetRefresh",
    "KeySetRefreshes",
    "LeaseHolder",
    "ListAuditOrder",
    "ListingExplanation",
    "ListingExplanationDistribution",
    "ListRecordsConsistency",
    "ListTenantsInclude",
    "LoadView",
    "MapShard",
    "MapShardState",
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
    "PlannedLoadState",
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
    "RouteExplanationDistribution",
    "RouteExplanationStrategy",
    "RunOutcome",
    "Shard",
    "ShardFailureReason",
    "ShardFailureView",
    "ShardList",
    "ShardLoadView",
    "ShardMapView",
    "ShardsSummary",
    "ShardState",
    "ShardUsage",
    "SigningKeyInfo",
    "SigningKeyInfoState",
    "SplitRequest",
    "Tenant",
    "TenantCollectionsView",
    "TenantHoldings",
    "TenantLoadView",
    "TenantQuotas",
    "TenantTier",
    "TenantUsage",
    "TierQuotas",
    "TierQuotasTier",
    "UpdateShard",
    "UpdateShardStateType1",
    "UpdateShardStateType2Type1",
    "UpdateShardStateType3Type1",
    "UpdateTenant",
    "UpdateTenantTierType1",
    "UpdateTenantTierType2Type1",
    "UpdateTenantTierType3Type1",
    "UsageCounts",
    "UsageDayLine",
    "UsageReport",
    "ValetKey",
    "ValetKeyMethod",
    "VshardLoadView",
    "VshardRange",
    "WorkMeasures",
)
