"""Contains all the data models used in inputs/outputs"""

from .agent_process_info import AgentProcessInfo
from .agent_view import AgentView
from .artifact_ref import ArtifactRef
from .artifacts import Artifacts
from .attempt_record import AttemptRecord
from .budgets import Budgets
from .budgets_input import BudgetsInput
from .bus_message import BusMessage
from .call_decision import CallDecision
from .change import Change
from .check_kind import CheckKind
from .check_type_0 import CheckType0
from .check_type_1 import CheckType1
from .check_type_2 import CheckType2
from .check_type_3 import CheckType3
from .child_run import ChildRun
from .confidence import Confidence
from .continue_body import ContinueBody
from .create_schedule import CreateSchedule
from .criterion_evidence import CriterionEvidence
from .criterion_verdict import CriterionVerdict
from .decision_type_0 import DecisionType0
from .decision_type_1 import DecisionType1
from .delivery_state import DeliveryState
from .delivery_view import DeliveryView
from .doc import Doc
from .doc_hit import DocHit
from .doc_meta import DocMeta
from .entity_type import EntityType
from .event import Event
from .event_kind import EventKind
from .executor_brief import ExecutorBrief
from .follow_up_body import FollowUpBody
from .get_config_response_200 import GetConfigResponse200
from .get_notifications_response_200 import GetNotificationsResponse200
from .get_runs_id_deliveries_response_200 import GetRunsIdDeliveriesResponse200
from .get_runs_id_events_response_200 import GetRunsIdEventsResponse200
from .get_runs_id_iterations_response_200 import GetRunsIdIterationsResponse200
from .get_runs_id_scratchpad_response_200 import GetRunsIdScratchpadResponse200
from .get_runs_id_workspace_search_response_200 import (
    GetRunsIdWorkspaceSearchResponse200,
)
from .get_runs_response_200 import GetRunsResponse200
from .get_runs_status import GetRunsStatus
from .get_schedules_response_200 import GetSchedulesResponse200
from .get_tasks_response_200 import GetTasksResponse200
from .get_webhooks_response_200 import GetWebhooksResponse200
from .get_webhooks_response_200_webhooks_item import GetWebhooksResponse200WebhooksItem
from .grading import Grading
from .iteration_metrics import IterationMetrics
from .iteration_record import IterationRecord
from .last_iteration import LastIteration
from .lease import Lease
from .link import Link
from .mark_read_body import MarkReadBody
from .mcp_server_list import McpServerList
from .mcp_server_view import McpServerView
from .message_body import MessageBody
from .metrics import Metrics
from .metrics_by_model import MetricsByModel
from .model_metrics import ModelMetrics
from .narrative_source import NarrativeSource
from .next_action import NextAction
from .notification import Notification
from .notification_data import NotificationData
from .notification_metrics import NotificationMetrics
from .outcome_payload import OutcomePayload
from .pad_entry import PadEntry
from .pending_call import PendingCall
from .permission_mode import PermissionMode
from .plan_artifact import PlanArtifact
from .plan_status import PlanStatus
from .plan_step import PlanStep
from .plan_step_edit import PlanStepEdit
from .post_notifications_read_response_200 import PostNotificationsReadResponse200
from .problem import Problem
from .put_webhooks_response_200 import PutWebhooksResponse200
from .put_webhooks_response_200_webhooks_item import PutWebhooksResponse200WebhooksItem
from .register_mcp_server import RegisterMcpServer
from .register_tool import RegisterTool
from .register_tool_parameters import RegisterToolParameters
from .relationship import Relationship
from .report import Report
from .report_metrics import ReportMetrics
from .report_metrics_by_model import ReportMetricsByModel
from .respond_body_type_0 import RespondBodyType0
from .respond_body_type_1 import RespondBodyType1
from .respond_body_type_2 import RespondBodyType2
from .run import Run
from .run_context import RunContext
from .run_patch import RunPatch
from .run_scope import RunScope
from .run_status import RunStatus
from .run_summary import RunSummary
from .run_template import RunTemplate
from .schedule import Schedule
from .scope import Scope
from .source_ref import SourceRef
from .status_block import StatusBlock
from .step_status import StepStatus
from .stop_type import StopType
from .stopping_reason import StoppingReason
from .streaks import Streaks
from .task_status import TaskStatus
from .task_summary import TaskSummary
from .task_view import TaskView
from .thresholds import Thresholds
from .tool_result_brief import ToolResultBrief
from .user_answer import UserAnswer
from .webhook import Webhook
from .webhooks_body import WebhooksBody
from .what_changed import WhatChanged
from .what_changed_sources import WhatChangedSources

__all__ = (
    "AgentProcessInfo",
    "AgentView",
    "ArtifactRef",
    "Artifacts",
    "AttemptRecord",
    "Budgets",
    "BudgetsInput",
    "BusMessage",
    "CallDecision",
    "Change",
    "CheckKind",
    "CheckType0",
    "CheckType1",
    "CheckType2",
    "CheckType3",
    "ChildRun",
    "Confidence",
    "ContinueBody",
    "CreateSchedule",
    "CriterionEvidence",
    "CriterionVerdict",
    "DecisionType0",
    "DecisionType1",
    "DeliveryState",
    "DeliveryView",
    "Doc",
    "DocHit",
    "DocMeta",
    "EntityType",
    "Event",
    "EventKind",
    "ExecutorBrief",
    "FollowUpBody",
    "GetConfigResponse200",
    "GetNotificationsResponse200",
    "GetRunsIdDeliveriesResponse200",
    "GetRunsIdEventsResponse200",
    "GetRunsIdIterationsResponse200",
    "GetRunsIdScratchpadResponse200",
    "GetRunsIdWorkspaceSearchResponse200",
    "GetRunsResponse200",
    "GetRunsStatus",
    "GetSchedulesResponse200",
    "GetTasksResponse200",
    "GetWebhooksResponse200",
    "GetWebhooksResponse200WebhooksItem",
    "Grading",
    "IterationMetrics",
    "IterationRecord",
    "LastIteration",
    "Lease",
    "Link",
    "MarkReadBody",
    "McpServerList",
    "McpServerView",
    "MessageBody",
    "Metrics",
    "MetricsByModel",
    "ModelMetrics",
    "NarrativeSource",
    "NextAction",
    "Notification",
    "NotificationData",
    "NotificationMetrics",
    "OutcomePayload",
    "PadEntry",
    "PendingCall",
    "PermissionMode",
    "PlanArtifact",
    "PlanStatus",
    "PlanStep",
    "PlanStepEdit",
    "PostNotificationsReadResponse200",
    "Problem",
    "PutWebhooksResponse200",
    "PutWebhooksResponse200WebhooksItem",
    "RegisterMcpServer",
    "RegisterTool",
    "RegisterToolParameters",
    "Relationship",
    "Report",
    "ReportMetrics",
    "ReportMetricsByModel",
    "RespondBodyType0",
    "RespondBodyType1",
    "RespondBodyType2",
    "Run",
    "RunContext",
    "RunPatch",
    "RunScope",
    "RunStatus",
    "RunSummary",
    "RunTemplate",
    "Schedule",
    "Scope",
    "SourceRef",
    "StatusBlock",
    "StepStatus",
    "StopType",
    "StoppingReason",
    "Streaks",
    "TaskStatus",
    "TaskSummary",
    "TaskView",
    "Thresholds",
    "ToolResultBrief",
    "UserAnswer",
    "Webhook",
    "WebhooksBody",
    "WhatChanged",
    "WhatChangedSources",
)
