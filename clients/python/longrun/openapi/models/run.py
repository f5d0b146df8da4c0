from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field
from typing_extensions import Self

from ..models.permission_mode import PermissionMode
from ..models.run_status import RunStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.budgets import Budgets
    from ..models.check_type_0 import CheckType0
    from ..models.check_type_1 import CheckType1
    from ..models.check_type_2 import CheckType2
    from ..models.check_type_3 import CheckType3
    from ..models.child_run import ChildRun
    from ..models.doc_meta import DocMeta
    from ..models.grading import Grading
    from ..models.last_iteration import LastIteration
    from ..models.lease import Lease
    from ..models.metrics import Metrics
    from ..models.pending_call import PendingCall
    from ..models.plan_step import PlanStep
    from ..models.report import Report
    from ..models.run_context import RunContext
    from ..models.run_patch import RunPatch
    from ..models.run_scope import RunScope
    from ..models.stopping_reason import StoppingReason
    from ..models.streaks import Streaks
    from ..models.thresholds import Thresholds
    from ..models.user_answer import UserAnswer


T = TypeVar("T", bound="Run")


@_attrs_define
class Run:
    """
    Attributes:
        budgets (Budgets): Hard limits of a run. Waiting time never counts against `max_running_ms`.
        cancel_requested (bool):
        created_at (int):
        depth (int):
        event_seq (int): Number of events appended so far; the next event gets `event_seq + 1`.
        hints (list[str]): Guidance for the next planner prompt (failed exit-gate conditions, anti-repetition).
        id (str):
        iteration (int): Last committed iteration (0 before the first commit).
        metrics (Metrics):
        model (str):
        notified (bool):
        objective (str):
        pending_answers (list[UserAnswer]): Answers from the user not yet shown to the planner.
        plan (list[PlanStep]):
        questions (list[str]): Open questions while `waiting_on_user`.
        remaining_work (list[str]):
        status (RunStatus): `paused`: Held by the user between iterations; `continue` queues it again.
        streaks (Streaks): The breakers' memory: consecutive-iteration counters, and what the last iterations did and
            left, all bounded.
        thresholds (Thresholds): Breaker thresholds, configurable per run.
        updated_at (int):
        user_id (str):
        agent (None | str | Unset): An agent run: its iterations are this coding agent's processes (`claude`, `codex`,
            `gemini`, `command`, or a backend the host configures) in the run's task folder,
            instead of planner calls.
        allowed_tools (list[str] | None | Unset): The tools this run may use (built-in or registered); `None`: every
            tool. Children
            inherit it.
        children (list[ChildRun] | Unset): Runs this run spawned, with the budgets carved out for them.
        children_wait_until (int | None | Unset): While `waiting_on_children`: when the wait times out
            (`child_wait_timeout_s` after it
            began) and the run goes on without the children still running.
        completion_criteria (list[CheckType0 | CheckType1 | CheckType2 | CheckType3 | str] | Unset): Conditions the
            result must meet: plain text, which a completion claim must map (`c1`,
            `c2`, … in order) to accepted evidence and a grader judges, or checks the platform runs.
        context (None | RunContext | Unset): What the run is about in the caller's world (`GET
            /v1/runs?context_type=&entity_id=`).
        ended_at (int | None | Unset):
        follow_up_question (None | str | Unset): The user's follow-up question to the run after it ended (`POST
            /v1/runs/{id}/follow-up`):
            every planner prompt from then on carries it, until another follow-up replaces it.
        grading (Grading | Unset): How a run's plain-text criteria are graded.
        last_iteration (LastIteration | None | Unset):
        lease (Lease | None | Unset):
        models (list[str] | Unset): Models the run rotates over (round robin, failing over past degraded ones) when more
            than one was asked for; the first is `model`. Empty: `model` alone.
        parent_run_id (None | str | Unset):
        pause_requested (bool | Unset): Set by `pause` while an iteration is in flight: its commit pauses the run.
            Default: False.
        pending_calls (list[PendingCall] | Unset): Under `per_write`: writes waiting for (or carrying) the user's
            decision.
        pending_messages (list[UserAnswer] | Unset): Messages the user posted to the run (`POST
            /v1/runs/{id}/messages`), not yet shown to a
            planner: the next iteration's prompt carries them, whatever the run's status.
        pending_patch (None | RunPatch | Unset): The user's edits, applied when the next iteration is claimed.
        permission_mode (PermissionMode | Unset): How much the agent may do without asking.

            `autopilot`: Plans and acts on its own.

            `approve_plan`: The first plan waits for the user's approval; then autopilot.

            `per_write`: Every write tool call waits for the user's approval.
        plan_approved (bool | Unset): Under `approve_plan`: the user approved a plan. Default: False.
        recent_docs (list[DocMeta] | Unset): The docs written most recently, newest first (at most `RECENT_DOCS`): the
            planner's
            index of the workspace, kept on the run so it costs no read per iteration.
        report (None | Report | Unset):
        scope (None | RunScope | Unset): Which of the caller's projects the run works in; the planner's and executors'
            prompts
            name them.
        spend_keys (list[str] | Unset): Keys of the last model calls whose spend was recorded: a spend write retried
            after it
            landed counts once.
        stopping_reason (None | StoppingReason | Unset):
    """

    budgets: Budgets
    cancel_requested: bool
    created_at: int
    depth: int
    event_seq: int
    hints: list[str]
    id: str
    iteration: int
    metrics: Metrics
    model: str
    notified: bool
    objective: str
    pending_answers: list[UserAnswer]
    plan: list[PlanStep]
    questions: list[str]
    remaining_work: list[str]
    status: RunStatus
    streaks: Streaks
    thresholds: Thresholds
    updated_at: int
    user_id: str
    agent: None | str | Unset = UNSET
    allowed_tools: list[str] | None | Unset = UNSET
    children: list[ChildRun] | Unset = UNSET
    children_wait_until: int | None | Unset = UNSET
    completion_criteria: (
        list[CheckType0 | CheckType1 | CheckType2 | CheckType3 | str] | Unset
    ) = UNSET
    context: None | RunContext | Unset = UNSET
    ended_at: int | None | Unset = UNSET
    follow_up_question: None | str | Unset = UNSET
    grading: Grading | Unset = UNSET
    last_iteration: LastIteration | None | Unset = UNSET
    lease: Lease | None | Unset = UNSET
    models: list[str] | Unset = UNSET
    parent_run_id: None | str | Unset = UNSET
    pause_requested: bool | Unset = False
    pending_calls: list[PendingCall] | Unset = UNSET
    pending_messages: list[UserAnswer] | Unset = UNSET
    pending_patch: None | RunPatch | Unset = UNSET
    permission_mode: PermissionMode | Unset = UNSET
    plan_approved: bool | Unset = False
    recent_docs: list[DocMeta] | Unset = UNSET
    report: None | Report | Unset = UNSET
    scope: None | RunScope | Unset = UNSET
    spend_keys: list[str] | Unset = UNSET
    stopping_reason: None | StoppingReason | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.check_type_0 import CheckType0
        from ..models.check_type_1 import CheckType1
        from ..models.check_type_2 import CheckType2
        from ..models.check_type_3 import CheckType3
        from ..models.last_iteration import LastIteration
        from ..models.lease import Lease
        from ..models.report import Report
        from ..models.run_context import RunContext
        from ..models.run_patch import RunPatch
        from ..models.run_scope import RunScope
        from ..models.stopping_reason import StoppingReason

        budgets = self.budgets.to_dict()

        cancel_requested = self.cancel_requested

        created_at = self.created_at

        depth = self.depth

        event_seq = self.event_seq

        hints = self.hints

        id = self.id

        iteration = self.iteration

        metrics = self.metrics.to_dict()

        model = self.model

        notified = self.notified

        objective = self.objective

        pending_answers = []
        for pending_answers_item_data in self.pending_answers:
            pending_answers_item = pending_answers_item_data.to_dict()
            pending_answers.append(pending_answers_item)

        plan = []
        for plan_item_data in self.plan:
            plan_item = plan_item_data.to_dict()
            plan.append(plan_item)

        questions = self.questions

        remaining_work = self.remaining_work

        status = self.status.value

        streaks = self.streaks.to_dict()

        thresholds = self.thresholds.to_dict()

        updated_at = self.updated_at

        user_id = self.user_id

        agent: None | str | Unset
        if isinstance(self.agent, Unset):
            agent = UNSET
        else:
            agent = self.agent

        allowed_tools: list[str] | None | Unset
        if isinstance(self.allowed_tools, Unset):
            allowed_tools = UNSET
        elif isinstance(self.allowed_tools, list):
            allowed_tools = self.allowed_tools

        else:
            allowed_tools = self.allowed_tools

        children: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.children, Unset):
            children = []
            for children_item_data in self.children:
                children_item = children_item_data.to_dict()
                children.append(children_item)

        children_wait_until: int | None | Unset
        if isinstance(self.children_wait_until, Unset):
            children_wait_until = UNSET
        else:
            children_wait_until = self.children_wait_until

        completion_criteria: list[dict[str, Any] | str] | Unset = UNSET
        if not isinstance(self.completion_criteria, Unset):
            completion_criteria = []
            for completion_criteria_item_data in self.completion_criteria:
                completion_criteria_item: dict[str, Any] | str
                if (
                    isinstance(completion_criteria_item_data, CheckType0)
                    or isinstance(completion_criteria_item_data, CheckType1)
                    or isinstance(completion_criteria_item_data, CheckType2)
                    or isinstance(completion_criteria_item_data, CheckType3)
                ):
                    completion_criteria_item = completion_criteria_item_data.to_dict()
                else:
                    completion_criteria_item = completion_criteria_item_data
                completion_criteria.append(completion_criteria_item)

        context: dict[str, Any] | None | Unset
        if isinstance(self.context, Unset):
            context = UNSET
        elif isinstance(self.context, RunContext):
            context = self.context.to_dict()
        else:
            context = self.context

        ended_at: int | None | Unset
        if isinstance(self.ended_at, Unset):
            ended_at = UNSET
        else:
            ended_at = self.ended_at

        follow_up_question: None | str | Unset
        if isinstance(self.follow_up_question, Unset):
            follow_up_question = UNSET
        else:
            follow_up_question = self.follow_up_question

        grading: dict[str, Any] | Unset = UNSET
        if not isinstance(self.grading, Unset):
            grading = self.grading.to_dict()

        last_iteration: dict[str, Any] | None | Unset
        if isinstance(self.last_iteration, Unset):
            last_iteration = UNSET
        elif isinstance(self.last_iteration, LastIteration):
            last_iteration = self.last_iteration.to_dict()
        else:
            last_iteration = self.last_iteration

        lease: dict[str, Any] | None | Unset
        if isinstance(self.lease, Unset):
            lease = UNSET
        elif isinstance(self.lease, Lease):
            lease = self.lease.to_dict()
        else:
            lease = self.lease

        models: list[str] | Unset = UNSET
        if not isinstance(self.models, Unset):
            models = self.models

        parent_run_id: None | str | Unset
        if isinstance(self.parent_run_id, Unset):
            parent_run_id = UNSET
        else:
            parent_run_id = self.parent_run_id

        pause_requested = self.pause_requested

        pending_calls: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.pending_calls, Unset):
            pending_calls = []
            for pending_calls_item_data in self.pending_calls:
                pending_calls_item = pending_calls_item_data.to_dict()
                pending_calls.append(pending_calls_item)

        pending_messages: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.pending_messages, Unset):
            pending_messages = []
            for pending_messages_item_data in self.pending_messages:
                pending_messages_item = pending_messages_item_data.to_dict()
                pending_messages.append(pending_messages_item)

        pending_patch: dict[str, Any] | None | Unset
        if isinstance(self.pending_patch, Unset):
            pending_patch = UNSET
        elif isinstance(self.pending_patch, RunPatch):
            pending_patch = self.pending_patch.to_dict()
        else:
            pending_patch = self.pending_patch

        permission_mode: str | Unset = UNSET
        if not isinstance(self.permission_mode, Unset):
            permission_mode = self.permission_mode.value

        plan_approved = self.plan_approved

        recent_docs: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.recent_docs, Unset):
            recent_docs = []
            for recent_docs_item_data in self.recent_docs:
                recent_docs_item = recent_docs_item_data.to_dict()
                recent_docs.append(recent_docs_item)

        report: dict[str, Any] | None | Unset
        if isinstance(self.report, Unset):
            report = UNSET
        elif isinstance(self.report, Report):
            report = self.report.to_dict()
        else:
            report = self.report

        scope: dict[str, Any] | None | Unset
        if isinstance(self.scope, Unset):
            scope = UNSET
        elif isinstance(self.scope, RunScope):
            scope = self.scope.to_dict()
        else:
            scope = self.scope

        spend_keys: list[str] | Unset = UNSET
        if not isinstance(self.spend_keys, Unset):
            spend_keys = self.spend_keys

        stopping_reason: dict[str, Any] | None | Unset
        if isinstance(self.stopping_reason, Unset):
            stopping_reason = UNSET
        elif isinstance(self.stopping_reason, StoppingReason):
            stopping_reason = self.stopping_reason.to_dict()
        else:
            stopping_reason = self.stopping_reason

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "budgets": budgets,
                "cancel_requested": cancel_requested,
                "created_at": created_at,
                "depth": depth,
                "event_seq": event_seq,
                "hints": hints,
                "id": id,
                "iteration": iteration,
                "metrics": metrics,
                "model": model,
                "notified": notified,
                "objective": objective,
                "pending_answers": pending_answers,
                "plan": plan,
                "questions": questions,
                "remaining_work": remaining_work,
                "status": status,
                "streaks": streaks,
                "thresholds": thresholds,
                "updated_at": updated_at,
                "user_id": user_id,
            }
        )
        if agent is not UNSET:
            field_dict["agent"] = agent
        if allowed_tools is not UNSET:
            field_dict["allowed_tools"] = allowed_tools
        if children is not UNSET:
            field_dict["children"] = children
        if children_wait_until is not UNSET:
            field_dict["children_wait_until"] = children_wait_until
        if completion_criteria is not UNSET:
            field_dict["completion_criteria"] = completion_criteria
        if context is not UNSET:
            field_dict["context"] = context
        if ended_at is not UNSET:
            field_dict["ended_at"] = ended_at
        if follow_up_question is not UNSET:
            field_dict["follow_up_question"] = follow_up_question
        if grading is not UNSET:
            field_dict["grading"] = grading
        if last_iteration is not UNSET:
            field_dict["last_iteration"] = last_iteration
        if lease is not UNSET:
            field_dict["lease"] = lease
        if models is not UNSET:
            field_dict["models"] = models
        if parent_run_id is not UNSET:
            field_dict["parent_run_id"] = parent_run_id
        if pause_requested is not UNSET:
            field_dict["pause_requested"] = pause_requested
        if pending_calls is not UNSET:
            field_dict["pending_calls"] = pending_calls
        if pending_messages is not UNSET:
            field_dict["pending_messages"] = pending_messages
        if pending_patch is not UNSET:
            field_dict["pending_patch"] = pending_patch
        if permission_mode is not UNSET:
            field_dict["permission_mode"] = permission_mode
        if plan_approved is not UNSET:
            field_dict["plan_approved"] = plan_approved
        if recent_docs is not UNSET:
            field_dict["recent_docs"] = recent_docs
        if report is not UNSET:
            field_dict["report"] = report
        if scope is not UNSET:
            field_dict["scope"] = scope
        if spend_keys is not UNSET:
            field_dict["spend_keys"] = spend_keys
        if stopping_reason is not UNSET:
            field_dict["stopping_reason"] = stopping_reason

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.budgets import Budgets
        from ..models.check_type_0 import CheckType0
        from ..models.check_type_1 import CheckType1
        from ..models.check_type_2 import CheckType2
        from ..models.check_type_3 import CheckType3
        from ..models.child_run import ChildRun
        from ..models.doc_meta import DocMeta
        from ..models.grading import Grading
        from ..models.last_iteration import LastIteration
        from ..models.lease import Lease
        from ..models.metrics import Metrics
        from ..models.pending_call import PendingCall
        from ..models.plan_step import PlanStep
        from ..models.report import Report
        from ..models.run_context import RunContext
        from ..models.run_patch import RunPatch
        from ..models.run_scope import RunScope
        from ..models.stopping_reason import StoppingReason
        from ..models.streaks import Streaks
        from ..models.thresholds import Thresholds
        from ..models.user_answer import UserAnswer

        d = dict(src_dict)
        budgets = Budgets.from_dict(d.pop("budgets"))

        cancel_requested = d.pop("cancel_requested")

        created_at = d.pop("created_at")

        depth = d.pop("depth")

        event_seq = d.pop("event_seq")

        hints = cast(list[str], d.pop("hints"))

        id = d.pop("id")

        iteration = d.pop("iteration")

        metrics = Metrics.from_dict(d.pop("metrics"))

        model = d.pop("model")

        notified = d.pop("notified")

        objective = d.pop("objective")

        pending_answers = []
        _pending_answers = d.pop("pending_answers")
        for pending_answers_item_data in _pending_answers:
            pending_answers_item = UserAnswer.from_dict(pending_answers_item_data)

            pending_answers.append(pending_answers_item)

        plan = []
        _plan = d.pop("plan")
        for plan_item_data in _plan:
            plan_item = PlanStep.from_dict(plan_item_data)

            plan.append(plan_item)

        questions = cast(list[str], d.pop("questions"))

        remaining_work = cast(list[str], d.pop("remaining_work"))

        status = RunStatus(d.pop("status"))

        streaks = Streaks.from_dict(d.pop("streaks"))

        thresholds = Thresholds.from_dict(d.pop("thresholds"))

        updated_at = d.pop("updated_at")

        user_id = d.pop("user_id")

        def _parse_agent(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        agent = _parse_agent(d.pop("agent", UNSET))

        def _parse_allowed_tools(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                allowed_tools_type_0 = cast(list[str], data)

                return allowed_tools_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        allowed_tools = _parse_allowed_tools(d.pop("allowed_tools", UNSET))

        _children = d.pop("children", UNSET)
        children: list[ChildRun] | Unset = UNSET
        if _children is not UNSET:
            children = []
            for children_item_data in _children:
                children_item = ChildRun.from_dict(children_item_data)

                children.append(children_item)

        def _parse_children_wait_until(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        children_wait_until = _parse_children_wait_until(
            d.pop("children_wait_until", UNSET)
        )

        _completion_criteria = d.pop("completion_criteria", UNSET)
        completion_criteria: (
            list[CheckType0 | CheckType1 | CheckType2 | CheckType3 | str] | Unset
        ) = UNSET
        if _completion_criteria is not UNSET:
            completion_criteria = []
            for completion_criteria_item_data in _completion_criteria:

                def _parse_completion_criteria_item(
                    data: object,
                ) -> CheckType0 | CheckType1 | CheckType2 | CheckType3 | str:
                    try:
                        if not isinstance(data, dict):
                            raise TypeError()
                        componentsschemas_check_type_0 = CheckType0.from_dict(data)

                        return componentsschemas_check_type_0
                    except (TypeError, ValueError, AttributeError, KeyError):
                        pass
                    try:
                        if not isinstance(data, dict):
                            raise TypeError()
                        componentsschemas_check_type_1 = CheckType1.from_dict(data)

                        return componentsschemas_check_type_1
                    except (TypeError, ValueError, AttributeError, KeyError):
                        pass
                    try:
                        if not isinstance(data, dict):
                            raise TypeError()
                        componentsschemas_check_type_2 = CheckType2.from_dict(data)

                        return componentsschemas_check_type_2
                    except (TypeError, ValueError, AttributeError, KeyError):
                        pass
                    try:
                        if not isinstance(data, dict):
                            raise TypeError()
                        componentsschemas_check_type_3 = CheckType3.from_dict(data)

                        return componentsschemas_check_type_3
                    except (TypeError, ValueError, AttributeError, KeyError):
                        pass
                    return cast(
                        CheckType0 | CheckType1 | CheckType2 | CheckType3 | str, data
                    )

                completion_criteria_item = _parse_completion_criteria_item(
                    completion_criteria_item_data
                )

                completion_criteria.append(completion_criteria_item)

        def _parse_context(data: object) -> None | RunContext | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                context_type_0 = RunContext.from_dict(data)

                return context_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RunContext | Unset, data)

        context = _parse_context(d.pop("context", UNSET))

        def _parse_ended_at(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        ended_at = _parse_ended_at(d.pop("ended_at", UNSET))

        def _parse_follow_up_question(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        follow_up_question = _parse_follow_up_question(
            d.pop("follow_up_question", UNSET)
        )

        _grading = d.pop("grading", UNSET)
        grading: Grading | Unset
        if isinstance(_grading, Unset):
            grading = UNSET
        else:
            grading = Grading.from_dict(_grading)

        def _parse_last_iteration(data: object) -> LastIteration | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                last_iteration_type_0 = LastIteration.from_dict(data)

                return last_iteration_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(LastIteration | None | Unset, data)

        last_iteration = _parse_last_iteration(d.pop("last_iteration", UNSET))

        def _parse_lease(data: object) -> Lease | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                lease_type_0 = Lease.from_dict(data)

                return lease_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Lease | None | Unset, data)

        lease = _parse_lease(d.pop("lease", UNSET))

        models = cast(list[str], d.pop("models", UNSET))

        def _parse_parent_run_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        parent_run_id = _parse_parent_run_id(d.pop("parent_run_id", UNSET))

        pause_requested = d.pop("pause_requested", UNSET)

        _pending_calls = d.pop("pending_calls", UNSET)
        pending_calls: list[PendingCall] | Unset = UNSET
        if _pending_calls is not UNSET:
            pending_calls = []
            for pending_calls_item_data in _pending_calls:
                pending_calls_item = PendingCall.from_dict(pending_calls_item_data)

                pending_calls.append(pending_calls_item)

        _pending_messages = d.pop("pending_messages", UNSET)
        pending_messages: list[UserAnswer] | Unset = UNSET
        if _pending_messages is not UNSET:
            pending_messages = []
            for pending_messages_item_data in _pending_messages:
                pending_messages_item = UserAnswer.from_dict(pending_messages_item_data)

                pending_messages.append(pending_messages_item)

        def _parse_pending_patch(data: object) -> None | RunPatch | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                pending_patch_type_0 = RunPatch.from_dict(data)

                return pending_patch_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RunPatch | Unset, data)

        pending_patch = _parse_pending_patch(d.pop("pending_patch", UNSET))

        _permission_mode = d.pop("permission_mode", UNSET)
        permission_mode: PermissionMode | Unset
        if isinstance(_permission_mode, Unset):
            permission_mode = UNSET
        else:
            permission_mode = PermissionMode(_permission_mode)

        plan_approved = d.pop("plan_approved", UNSET)

        _recent_docs = d.pop("recent_docs", UNSET)
        recent_docs: list[DocMeta] | Unset = UNSET
        if _recent_docs is not UNSET:
            recent_docs = []
            for recent_docs_item_data in _recent_docs:
                recent_docs_item = DocMeta.from_dict(recent_docs_item_data)

                recent_docs.append(recent_docs_item)

        def _parse_report(data: object) -> None | Report | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                report_type_0 = Report.from_dict(data)

                return report_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Report | Unset, data)

        report = _parse_report(d.pop("report", UNSET))

        def _parse_scope(data: object) -> None | RunScope | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                scope_type_0 = RunScope.from_dict(data)

                return scope_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RunScope | Unset, data)

        scope = _parse_scope(d.pop("scope", UNSET))

        spend_keys = cast(list[str], d.pop("spend_keys", UNSET))

        def _parse_stopping_reason(data: object) -> None | StoppingReason | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                stopping_reason_type_0 = StoppingReason.from_dict(data)

                return stopping_reason_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | StoppingReason | Unset, data)

        stopping_reason = _parse_stopping_reason(d.pop("stopping_reason", UNSET))

        run = cls(
            budgets=budgets,
            cancel_requested=cancel_requested,
            created_at=created_at,
            depth=depth,
            event_seq=event_seq,
            hints=hints,
            id=id,
            iteration=iteration,
            metrics=metrics,
            model=model,
            notified=notified,
            objective=objective,
            pending_answers=pending_answers,
            plan=plan,
            questions=questions,
            remaining_work=remaining_work,
            status=status,
            streaks=streaks,
            thresholds=thresholds,
            updated_at=updated_at,
            user_id=user_id,
            agent=agent,
            allowed_tools=allowed_tools,
            children=children,
            children_wait_until=children_wait_until,
            completion_criteria=completion_criteria,
            context=context,
            ended_at=ended_at,
            follow_up_question=follow_up_question,
            grading=grading,
            last_iteration=last_iteration,
            lease=lease,
            models=models,
            parent_run_id=parent_run_id,
            pause_requested=pause_requested,
            pending_calls=pending_calls,
            pending_messages=pending_messages,
            pending_patch=pending_patch,
            permission_mode=permission_mode,
            plan_approved=plan_approved,
            recent_docs=recent_docs,
            report=report,
            scope=scope,
            spend_keys=spend_keys,
            stopping_reason=stopping_reason,
        )

        run.additional_properties = d
        return run

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
