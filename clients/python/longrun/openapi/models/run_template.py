from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from typing_extensions import Self

from ..models.permission_mode import PermissionMode
from ..models.scope import Scope
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.budgets_input import BudgetsInput
    from ..models.check_type_0 import CheckType0
    from ..models.check_type_1 import CheckType1
    from ..models.check_type_2 import CheckType2
    from ..models.check_type_3 import CheckType3
    from ..models.grading import Grading
    from ..models.run_context import RunContext
    from ..models.thresholds import Thresholds


T = TypeVar("T", bound="RunTemplate")


@_attrs_define
class RunTemplate:
    """A run to start: the body of `POST /v1/runs`, and what a schedule starts at each occurrence.

    Attributes:
        objective (str): What the run must achieve (not blank).
        agent (None | str | Unset): Run a coding agent instead of the planner: each iteration is one process of this
            agent (`claude`, `codex`, `gemini`, `command`, or another backend the server
            configures) in the run's task folder, with the objective as its TASK.md. Only where
            the server can start processes (`longrun serve`); a Lambda deployment answers 422.
        allowed_tools (list[str] | None | Unset): The tools the run may use, by name (built-in or registered); all when
            absent.
        budgets (BudgetsInput | Unset): Budget values as a user may send them: every field optional, negatives rejected
            by validation
            (not by the type) so the error can name the field and the value.
        completion_criteria (list[CheckType0 | CheckType1 | CheckType2 | CheckType3 | str] | Unset): Conditions the
            result must meet (at most 20). Plain text (1 to 500 characters): the
            planner's claim must map it to evidence (documents this run wrote that are not empty,
            or plan steps that are done), and a grader judges that evidence against it. Or a check
            the platform runs when completion is claimed: `{"check": "contains", "doc", "text"}`,
            `{"check": "matches", "doc", "pattern"}`, `{"check": "command", "run"}` (agent runs)
            or `{"check": "grader", "rubric"}`.
        context (None | RunContext | Unset): What the run is about in your application, to list its runs by
            (`GET /v1/runs?context_type=&entity_id=`).
        grading (Grading | None | Unset): Whether plain-text criteria are graded (default: yes) and by which model.
        model (None | str | Unset): `provider:model`; one of the server's configured models.
        models (list[str] | Unset): Several `provider:model`s to rotate over, round robin, failing over past degraded
            ones; the first is the run's model. Instead of `model`, or starting with it.
        permission_mode (None | PermissionMode | Unset): `autopilot` (default), `approve_plan` or `per_write`.
        project_ids (list[str] | None | Unset): The projects of `scope` (at most 50, each 1 to 128 characters, no
            repeats).
        scope (None | Scope | Unset): Which of your projects the run works in: `global` (none in particular), `project`
            (the
            one `project_ids` names) or `multi_project` (those it names); its prompts name them.
        thresholds (None | Thresholds | Unset):
    """

    objective: str
    agent: None | str | Unset = UNSET
    allowed_tools: list[str] | None | Unset = UNSET
    budgets: BudgetsInput | Unset = UNSET
    completion_criteria: (
        list[CheckType0 | CheckType1 | CheckType2 | CheckType3 | str] | Unset
    ) = UNSET
    context: None | RunContext | Unset = UNSET
    grading: Grading | None | Unset = UNSET
    model: None | str | Unset = UNSET
    models: list[str] | Unset = UNSET
    permission_mode: None | PermissionMode | Unset = UNSET
    project_ids: list[str] | None | Unset = UNSET
    scope: None | Scope | Unset = UNSET
    thresholds: None | Thresholds | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.check_type_0 import CheckType0
        from ..models.check_type_1 import CheckType1
        from ..models.check_type_2 import CheckType2
        from ..models.check_type_3 import CheckType3
        from ..models.grading import Grading
        from ..models.run_context import RunContext
        from ..models.thresholds import Thresholds

        objective = self.objective

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

        budgets: dict[str, Any] | Unset = UNSET
        if not isinstance(self.budgets, Unset):
            budgets = self.budgets.to_dict()

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

        grading: dict[str, Any] | None | Unset
        if isinstance(self.grading, Unset):
            grading = UNSET
        elif isinstance(self.grading, Grading):
            grading = self.grading.to_dict()
        else:
            grading = self.grading

        model: None | str | Unset
        if isinstance(self.model, Unset):
            model = UNSET
        else:
            model = self.model

        models: list[str] | Unset = UNSET
        if not isinstance(self.models, Unset):
            models = self.models

        permission_mode: None | str | Unset
        if isinstance(self.permission_mode, Unset):
            permission_mode = UNSET
        elif isinstance(self.permission_mode, PermissionMode):
            permission_mode = self.permission_mode.value
        else:
            permission_mode = self.permission_mode

        project_ids: list[str] | None | Unset
        if isinstance(self.project_ids, Unset):
            project_ids = UNSET
        elif isinstance(self.project_ids, list):
            project_ids = self.project_ids

        else:
            project_ids = self.project_ids

        scope: None | str | Unset
        if isinstance(self.scope, Unset):
            scope = UNSET
        elif isinstance(self.scope, Scope):
            scope = self.scope.value
        else:
            scope = self.scope

        thresholds: dict[str, Any] | None | Unset
        if isinstance(self.thresholds, Unset):
            thresholds = UNSET
        elif isinstance(self.thresholds, Thresholds):
            thresholds = self.thresholds.to_dict()
        else:
            thresholds = self.thresholds

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "objective": objective,
            }
        )
        if agent is not UNSET:
            field_dict["agent"] = agent
        if allowed_tools is not UNSET:
            field_dict["allowed_tools"] = allowed_tools
        if budgets is not UNSET:
            field_dict["budgets"] = budgets
        if completion_criteria is not UNSET:
            field_dict["completion_criteria"] = completion_criteria
        if context is not UNSET:
            field_dict["context"] = context
        if grading is not UNSET:
            field_dict["grading"] = grading
        if model is not UNSET:
            field_dict["model"] = model
        if models is not UNSET:
            field_dict["models"] = models
        if permission_mode is not UNSET:
            field_dict["permission_mode"] = permission_mode
        if project_ids is not UNSET:
            field_dict["project_ids"] = project_ids
        if scope is not UNSET:
            field_dict["scope"] = scope
        if thresholds is not UNSET:
            field_dict["thresholds"] = thresholds

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.budgets_input import BudgetsInput
        from ..models.check_type_0 import CheckType0
        from ..models.check_type_1 import CheckType1
        from ..models.check_type_2 import CheckType2
        from ..models.check_type_3 import CheckType3
        from ..models.grading import Grading
        from ..models.run_context import RunContext
        from ..models.thresholds import Thresholds

        d = dict(src_dict)
        objective = d.pop("objective")

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

        _budgets = d.pop("budgets", UNSET)
        budgets: BudgetsInput | Unset
        if isinstance(_budgets, Unset):
            budgets = UNSET
        else:
            budgets = BudgetsInput.from_dict(_budgets)

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

        def _parse_grading(data: object) -> Grading | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                grading_type_0 = Grading.from_dict(data)

                return grading_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Grading | None | Unset, data)

        grading = _parse_grading(d.pop("grading", UNSET))

        def _parse_model(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        model = _parse_model(d.pop("model", UNSET))

        models = cast(list[str], d.pop("models", UNSET))

        def _parse_permission_mode(data: object) -> None | PermissionMode | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                permission_mode_type_0 = PermissionMode(data)

                return permission_mode_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | PermissionMode | Unset, data)

        permission_mode = _parse_permission_mode(d.pop("permission_mode", UNSET))

        def _parse_project_ids(data: object) -> list[str] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                project_ids_type_0 = cast(list[str], data)

                return project_ids_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | Unset, data)

        project_ids = _parse_project_ids(d.pop("project_ids", UNSET))

        def _parse_scope(data: object) -> None | Scope | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                scope_type_0 = Scope(data)

                return scope_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Scope | Unset, data)

        scope = _parse_scope(d.pop("scope", UNSET))

        def _parse_thresholds(data: object) -> None | Thresholds | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                thresholds_type_0 = Thresholds.from_dict(data)

                return thresholds_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Thresholds | Unset, data)

        thresholds = _parse_thresholds(d.pop("thresholds", UNSET))

        run_template = cls(
            objective=objective,
            agent=agent,
            allowed_tools=allowed_tools,
            budgets=budgets,
            completion_criteria=completion_criteria,
            context=context,
            grading=grading,
            model=model,
            models=models,
            permission_mode=permission_mode,
            project_ids=project_ids,
            scope=scope,
            thresholds=thresholds,
        )

        return run_template
