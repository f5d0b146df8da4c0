from enum import StrEnum


class EventKind(StrEnum):
    CANCEL_REQUESTED = "cancel_requested"
    CHILD_FINISHED = "child_finished"
    CHILD_SPAWNED = "child_spawned"
    CHILD_WAIT_TIMED_OUT = "child_wait_timed_out"
    CRITERIA_CHECKED = "criteria_checked"
    FOLLOW_UP_ASKED = "follow_up_asked"
    ITERATION_COMMITTED = "iteration_committed"
    ITERATION_COST_UPDATE = "iteration_cost_update"
    ITERATION_DEFERRED = "iteration_deferred"
    ITERATION_STARTED = "iteration_started"
    MESSAGE_POSTED = "message_posted"
    PAUSE_REQUESTED = "pause_requested"
    RUN_CANCELED = "run_canceled"
    RUN_COMPLETED = "run_completed"
    RUN_CONTINUED = "run_continued"
    RUN_CREATED = "run_created"
    RUN_FAILED = "run_failed"
    RUN_PATCHED = "run_patched"
    RUN_PAUSED = "run_paused"
    RUN_RESUMED = "run_resumed"
    RUN_STOPPED = "run_stopped"
    RUN_WAITING = "run_waiting"
    USER_RESPONDED = "user_responded"
    WAITING_FOR_CAPACITY = "waiting_for_capacity"
    WARNING = "warning"

    def __str__(self) -> str:
        return str(self.value)
