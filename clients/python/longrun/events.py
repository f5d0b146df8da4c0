"""A run's events, typed: :class:`Event` carries its ``payload`` as one dataclass per event type,
as the server writes them (``shared/domain/src/events.rs``). The OpenAPI document types the
payload as any JSON, so these are written here by hand; ``tests/acceptance.py`` holds them to
what a real server sends. Match on them::

    for e in lr.events(run.id):
        match e.payload:
            case IterationCommitted(iteration=n, summary=summary):
                print(n, summary)
            case RunEnded(stopping_reason=reason):
                print(e.type, reason.type, reason.detail)
"""

from __future__ import annotations

import dataclasses
import enum
import typing
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple, Type, Union

from .openapi.models import (
    Budgets,
    CriterionVerdict,
    EventKind,
    PlanStepEdit,
    RunStatus,
    StoppingReason,
)


@dataclass(frozen=True)
class Payload:
    """What every payload has: ``extra``, the fields a newer server sends that this client does
    not know (empty while client and server agree)."""

    extra: Dict[str, Any] = field(default_factory=dict, kw_only=True, repr=False, compare=False)


@dataclass(frozen=True)
class RunCreated(Payload):
    objective: str
    budgets: Budgets
    model: str
    parent_run_id: Optional[str]


@dataclass(frozen=True)
class PatchApplied(Payload):
    """The user's edit as a claim applied it."""

    objective: Optional[str] = None
    plan: List[PlanStepEdit] = field(default_factory=list)


@dataclass(frozen=True)
class IterationStarted(Payload):
    iteration: int
    reclaimed: bool
    #: The user's edit this claim applied, when there was one.
    patched: Optional[PatchApplied] = None


@dataclass(frozen=True)
class IterationDeferred(Payload):
    """A claimed iteration was given back unfinished, to be tried again later."""

    iteration: int
    reason: str


@dataclass(frozen=True)
class IterationCostUpdate(Payload):
    """One model call: its tokens and cost (``None`` for an unpriced model), and the run's
    totals after it."""

    iteration: int
    role: str
    model: str
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    cost_usd: Optional[float]
    latency_ms: int
    run_tokens: int
    run_cost_usd: float


@dataclass(frozen=True)
class WaitingForCapacity(Payload):
    """A model call waited for the model's shared capacity; the wait is not running time."""

    iteration: int
    role: str
    model: str
    waited_ms: int


@dataclass(frozen=True)
class RunWarning(Payload):
    message: str


@dataclass(frozen=True)
class IterationCommitted(Payload):
    iteration: int
    status: RunStatus
    summary: str
    progress: bool
    created_docs: List[str]
    updated_docs: List[str]
    tokens: int
    cost_usd: float


@dataclass(frozen=True)
class CriteriaChecked(Payload):
    """A completion claim's criteria, checked: each one's verdict, and whether the claim was
    accepted."""

    iteration: int
    accepted: bool
    verdicts: List[CriterionVerdict]


@dataclass(frozen=True)
class ChildSpawned(Payload):
    child_run_id: str
    objective: str
    budgets: Budgets
    #: Fire-and-forget: the parent neither waits for it nor ends it.
    detached: bool


@dataclass(frozen=True)
class RunPaused(Payload):
    after_iteration: int


@dataclass(frozen=True)
class RunWaiting(Payload):
    """Waiting on the user (``questions``) or on its children (``children``, those still active)."""

    questions: Optional[List[str]] = None
    children: Optional[List[str]] = None


@dataclass(frozen=True)
class ChildWaitTimedOut(Payload):
    """The wait for children timed out; those still running go on as if detached."""

    waited_ms: int
    still_running: List[str]


@dataclass(frozen=True)
class RunEnded(Payload):
    """``run_completed``, ``run_stopped``, ``run_canceled`` and ``run_failed``: why."""

    stopping_reason: StoppingReason


@dataclass(frozen=True)
class CancelRequested(Payload):
    pass


@dataclass(frozen=True)
class PauseRequested(Payload):
    pass


@dataclass(frozen=True)
class ObjectiveChange(Payload):
    # `from` is a keyword: read it as `from_`.
    from_: str
    to: str


@dataclass(frozen=True)
class PatchRequested(Payload):
    """The user's edit as it was asked for."""

    objective: Optional[ObjectiveChange] = None
    plan: List[PlanStepEdit] = field(default_factory=list)


@dataclass(frozen=True)
class RunPatched(Payload):
    changed: PatchRequested
    applies_from_iteration: int


@dataclass(frozen=True)
class RunResumed(Payload):
    from_iteration: int
    reason: Optional[str] = None


@dataclass(frozen=True)
class Decision(Payload):
    """``approved``, or ``rejected`` with a reason."""

    decision: str
    reason: Optional[str] = None


@dataclass(frozen=True)
class CallDecided(Payload):
    """A held call and what the user decided (``None``: nothing yet)."""

    id: str
    name: str
    decision: Optional[Decision]


@dataclass(frozen=True)
class UserResponded(Payload):
    questions: List[str]
    answer: str
    approve: Optional[bool]
    decisions: List[CallDecided]


@dataclass(frozen=True)
class MessagePosted(Payload):
    text: str
    #: The first iteration whose planner sees it.
    for_iteration: int


@dataclass(frozen=True)
class RunContinued(Payload):
    budgets: Budgets
    from_iteration: int


@dataclass(frozen=True)
class SupersededReport(Payload):
    """The report an ended run had before a follow-up question superseded it."""

    status: RunStatus
    stopping_reason: Optional[StoppingReason]
    summary: Optional[str]
    ended_at: Optional[int]


@dataclass(frozen=True)
class FollowUpAsked(Payload):
    question: str
    from_iteration: int
    budgets: Budgets
    superseded: SupersededReport


@dataclass(frozen=True)
class ChildFinished(Payload):
    child_run_id: str
    status: RunStatus
    summary: str
    tokens: int
    cost_usd: float


@dataclass(frozen=True)
class UnknownPayload(Payload):
    """The payload of an event type this client does not know (a newer server's), as sent."""

    data: Dict[str, Any] = field(default_factory=dict)


#: The payload class of each event type.
PAYLOADS: Dict[str, Type[Payload]] = {
    "run_created": RunCreated,
    "iteration_started": IterationStarted,
    "iteration_deferred": IterationDeferred,
    "iteration_cost_update": IterationCostUpdate,
    "waiting_for_capacity": WaitingForCapacity,
    "warning": RunWarning,
    "iteration_committed": IterationCommitted,
    "criteria_checked": CriteriaChecked,
    "child_spawned": ChildSpawned,
    "run_paused": RunPaused,
    "run_waiting": RunWaiting,
    "child_wait_timed_out": ChildWaitTimedOut,
    "run_completed": RunEnded,
    "run_stopped": RunEnded,
    "run_canceled": RunEnded,
    "run_failed": RunEnded,
    "cancel_requested": CancelRequested,
    "pause_requested": PauseRequested,
    "run_patched": RunPatched,
    "run_resumed": RunResumed,
    "user_responded": UserResponded,
    "message_posted": MessagePosted,
    "run_continued": RunContinued,
    "follow_up_asked": FollowUpAsked,
    "child_finished": ChildFinished,
}

EventPayload = Union[
    RunCreated, IterationStarted, IterationDeferred, IterationCostUpdate, WaitingForCapacity,
    RunWarning, IterationCommitted, CriteriaChecked, ChildSpawned, RunPaused, RunWaiting, ChildWaitTimedOut,
    RunEnded, CancelRequested, PauseRequested, RunPatched, RunResumed, UserResponded,
    MessagePosted, RunContinued, FollowUpAsked, ChildFinished, UnknownPayload,
]


class PayloadMismatch(ValueError):
    """With ``strict=True``: a payload that is not what its type says (a field missing, or one
    this client does not know)."""


def _json_name(f: dataclasses.Field) -> str:
    return f.name[:-1] if f.name.endswith("_") else f.name


def _convert(hint: Any, value: Any, strict: bool) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is Union:
        if value is None:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _convert(inner, value, strict)
    if origin in (list, List):
        return [_convert(args[0], v, strict) for v in value]
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _parse(hint, value, strict)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(value)
    if hasattr(hint, "from_dict"):
        return hint.from_dict(value)
    if hint is float and isinstance(value, int):
        return float(value)
    return value


def _parse(cls: Type[Payload], data: Mapping[str, Any], strict: bool) -> Any:
    hints = typing.get_type_hints(cls)
    values: Dict[str, Any] = {}
    rest = dict(data)
    for f in dataclasses.fields(cls):
        if f.name == "extra":
            continue
        name = _json_name(f)
        if name in rest:
            values[f.name] = _convert(hints[f.name], rest.pop(name), strict)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            if strict:
                raise PayloadMismatch(f"{cls.__name__}: the server sent no `{name}`")
            values[f.name] = None
    if rest and strict:
        raise PayloadMismatch(f"{cls.__name__}: fields this client does not know: {sorted(rest)}")
    return cls(**values, extra=rest)


def parse_payload(kind: str, payload: Mapping[str, Any], *, strict: bool = False) -> EventPayload:
    """The typed payload of an event of type ``kind``. ``strict``: raise :class:`PayloadMismatch`
    instead of keeping unknown fields in ``extra`` (and missing ones as ``None``)."""
    cls = PAYLOADS.get(str(kind))
    if cls is None:
        return UnknownPayload(data=dict(payload))
    return _parse(cls, payload, strict)


@dataclass(frozen=True)
class Event:
    """One entry of a run's gapless event log (seqs 1, 2, 3, … with no holes). ``type`` is an
    :class:`EventKind` (a ``str``: ``e.type == "run_completed"``; a type this client does not know
    stays a plain ``str``), ``payload`` its typed payload."""

    run_id: str
    seq: int
    type: Union[EventKind, str]
    at: int
    payload: EventPayload
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_dict(cls, src: Mapping[str, Any], *, strict: bool = False) -> "Event":
        kind = str(src["type"])
        known: Union[EventKind, str] = EventKind(kind) if kind in EventKind._value2member_map_ else kind
        return cls(
            run_id=src["run_id"],
            seq=src["seq"],
            type=known,
            at=src["at"],
            payload=parse_payload(kind, src.get("payload") or {}, strict=strict),
            raw=dict(src),
        )

    def to_dict(self) -> Dict[str, Any]:
        """The event as the server sent it."""
        return dict(self.raw)


@dataclass(frozen=True)
class EventsPage:
    """One page of a run's log: its events and the ``after`` that resumes after them."""

    events: List[Event]
    next_after: int

    @classmethod
    def from_dict(cls, src: Mapping[str, Any]) -> "EventsPage":
        return cls([Event.from_dict(e) for e in src.get("events", [])], int(src.get("next_after", 0)))


__all__: Tuple[str, ...] = tuple(
    ["Event", "EventsPage", "EventPayload", "Payload", "PayloadMismatch", "PAYLOADS", "UnknownPayload", "parse_payload"]
    + sorted({c.__name__ for c in PAYLOADS.values()})
    + ["PatchApplied", "PatchRequested", "ObjectiveChange", "Decision", "CallDecided", "SupersededReport"]
)
