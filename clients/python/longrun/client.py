"""The client: the generated calls with typed problems, plus what the generator does not do —
a resumable event stream (SSE with ``Last-Event-ID``, falling back to long-poll) of typed events,
a paging iterator over runs, and request bodies sent as the caller wrote them (the generated
models drop a field they do not know, so a misspelt budget would vanish instead of being
refused). :class:`Longrun` is synchronous, :class:`AsyncLongrun` the same on asyncio."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import (
    Any,
    AsyncIterator,
    Callable,
    Dict,
    Iterator,
    List,
    Optional,
    Tuple,
    TypeVar,
    Union,
)

import httpx
from urllib.parse import quote

from .errors import LongrunError, Unreachable, problem_from
from .events import Event, EventsPage
from .openapi.api.runs import (
    get_runs,
    get_runs_id,
    get_runs_id_report,
    post_runs_id_cancel,
    post_runs_id_pause,
)
from .openapi.api.webhooks import get_runs_id_deliveries
from .openapi.api.workspace import get_runs_id_docs_path
from .openapi.client import AuthenticatedClient, Client
from .openapi.models import (
    DeliveryView,
    Doc,
    GetRunsResponse200,
    GetRunsStatus,
    Report,
    Run,
    RunSummary,
)
from .openapi.types import UNSET, Response

T = TypeVar("T")

#: Statuses in which a run has ended.
ENDED = ("completed", "stopped", "canceled", "failed")
#: Statuses in which a run's log stops growing until someone acts.
SETTLED = ENDED + ("waiting_on_user", "waiting_on_children")

Body = Union[Dict[str, Any], Any]


def _status(value: Any) -> str:
    return str(getattr(value, "value", value))


def _checked(resp: Response[Any]) -> Any:
    """The parsed answer of a generated call, or its problem raised as a typed exception."""
    status = int(resp.status_code)
    if status >= 400:
        raise problem_from(status, resp.content)
    return resp.parsed


def _as_json(body: Body) -> Any:
    """A body as the caller wrote it: a dict goes as is, so the server judges every field (a
    misspelt one is a 422 naming it), a generated model as its ``to_dict()``."""
    return body.to_dict() if hasattr(body, "to_dict") else body


def _with_budgets(body: Dict[str, Any], budgets: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    return {**body, "budgets": _as_json(budgets)} if budgets else body


def _answer(res: httpx.Response) -> Any:
    if res.status_code >= 400:
        raise problem_from(res.status_code, res.content)
    return res.json() if res.content else None


def _events_query(after: int, wait: Optional[int], limit: Optional[int]) -> Dict[str, int]:
    q = {"after": after}
    if wait is not None:
        q["wait"] = wait
    if limit is not None:
        q["limit"] = limit
    return q


def _run_path(run_id: str, rest: str = "") -> str:
    return f"/v1/runs/{quote(run_id, safe='')}{rest}"


#: What a create retries: no answer (``Unreachable``, status 0) or the server unavailable.
_RETRYABLE = (0, 502, 503, 504)


def _query_status(status: Optional[str]) -> Any:
    return UNSET if status is None else GetRunsStatus(status)


class _NoStream(Exception):
    """The server answered the stream route with something that is not a stream (e.g. API
    Gateway): follow the run by long-poll instead."""


def _sse_events(lines: Iterator[str]) -> Iterator[Event]:
    data: List[str] = []
    for line in lines:
        if line == "":
            if data:
                yield Event.from_dict(json.loads("\n".join(data)))
                data = []
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())
    if data:
        yield Event.from_dict(json.loads("\n".join(data)))


def _stream_problem(status: int, content: bytes, content_type: str) -> Exception:
    # A gateway without the route answers without a problem document; longrun's own 404
    # (no such run) has one and is not retried.
    if status in (404, 405, 501) and "problem+json" not in content_type:
        return _NoStream()
    return problem_from(status, content)


class _Base:
    def __init__(
        self,
        base_url: str,
        token: Optional[str] = None,
        *,
        timeout: float = 60.0,
        retry: float = 0.5,
        httpx_args: Optional[Dict[str, Any]] = None,
    ) -> None:
        base_url = base_url.rstrip("/")
        args: Dict[str, Any] = {
            "base_url": base_url,
            # Long-polls wait up to 30 s on the server.
            "timeout": httpx.Timeout(timeout),
            "raise_on_unexpected_status": False,
            "httpx_args": httpx_args or {},
        }
        #: The generated client: every operation of ``longrun.openapi.api.default`` takes it.
        self.api: Union[AuthenticatedClient, Client] = (
            AuthenticatedClient(token=token, **args) if token else Client(**args)
        )
        self.retry = retry


class Longrun(_Base):
    """A synchronous client::

        lr = Longrun("http://127.0.0.1:8080", token=os.environ["LONGRUN_TOKEN"])
        run = lr.create_run({"objective": "Write a tea guide", "budgets": {"max_iterations": 5}})
        for event in lr.events(run.id):
            print(event.seq, event.type)   # event.payload: its type's dataclass (longrun.events)
    """

    def _call(self, f: Callable[..., Response[T]], *args: Any, **kwargs: Any) -> T:
        try:
            return _checked(f(*args, client=self.api, **kwargs))
        except httpx.TransportError as e:
            raise Unreachable(0, "The API cannot be reached", str(e)) from e

    def _send(self, method: str, path: str, body: Any = None, **kwargs: Any) -> Any:
        """One request with a JSON body as given; its answer parsed, or its problem raised."""
        try:
            res = self.api.get_httpx_client().request(method, path, json=body, **kwargs)
        except httpx.TransportError as e:
            raise Unreachable(0, "The API cannot be reached", str(e)) from e
        return _answer(res)

    def __enter__(self) -> "Longrun":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self.api.get_httpx_client().close()

    # Runs

    def create_run(
        self, body: Body, *, idempotency_key: Optional[str] = None, attempts: int = 3
    ) -> Run:
        """Start a run: ``{"objective": …, "budgets": {…}, "model": …}`` or a ``RunTemplate``.

        The body is sent as written: a field the API does not have (``max_iteration`` for
        ``max_iterations``) is refused with :class:`~longrun.Unprocessable` naming it, never
        dropped. Sends one ``Idempotency-Key`` for this create (``idempotency_key``, or a fresh
        UUID) and retries under it when the answer is lost or the server is unavailable, so a
        retry returns the run the first attempt started instead of starting another."""
        key = idempotency_key or str(uuid.uuid4())
        for attempt in range(1, attempts + 1):
            try:
                return Run.from_dict(self._send("POST", "/v1/runs", _as_json(body), headers={"Idempotency-Key": key}))
            except LongrunError as e:
                if e.status not in _RETRYABLE or attempt == attempts:
                    raise
                time.sleep(self.retry * 2 ** (attempt - 1))
        raise AssertionError("unreachable")

    def get_run(self, run_id: str) -> Run:
        return self._call(get_runs_id.sync_detailed, run_id)

    def list_runs_page(
        self,
        status: Optional[str] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> GetRunsResponse200:
        """One page of your runs, newest first; pass its ``next_cursor`` for the next one."""
        return self._call(
            get_runs.sync_detailed,
            status=_query_status(status),
            limit=UNSET if limit is None else limit,
            cursor=UNSET if cursor is None else cursor,
        )

    def runs(self, status: Optional[str] = None, page_size: Optional[int] = None) -> Iterator[RunSummary]:
        """Every run of yours, newest first, fetching page after page as you iterate."""
        cursor: Optional[str] = None
        while True:
            page = self.list_runs_page(status, page_size, cursor)
            yield from page.runs
            cursor = page.next_cursor if isinstance(page.next_cursor, str) else None
            if not cursor:
                return

    def cancel(self, run_id: str) -> Run:
        return self._call(post_runs_id_cancel.sync_detailed, run_id)

    def pause(self, run_id: str) -> Run:
        return self._call(post_runs_id_pause.sync_detailed, run_id)

    def respond(self, run_id: str, answer: str = "", approve: Optional[bool] = None) -> Run:
        # The body is an answer, an approval or decisions (an anyOf): sent as JSON here.
        body: Dict[str, Any] = {"answer": answer}
        if approve is not None:
            body["approve"] = approve
        return Run.from_dict(self._send("POST", _run_path(run_id, "/respond"), body))

    def message(self, run_id: str, text: str) -> Run:
        """Tell a run that has not ended something: its next iteration's planner reads it."""
        return Run.from_dict(self._send("POST", _run_path(run_id, "/messages"), {"text": text}))

    def continue_run(self, run_id: str, budgets: Optional[Dict[str, Any]] = None) -> Run:
        """Resume a paused run, or continue a stopped one with raised budgets (sent as written)."""
        return Run.from_dict(self._send("POST", _run_path(run_id, "/continue"), _with_budgets({}, budgets)))

    def follow_up(self, run_id: str, question: str, budgets: Optional[Dict[str, Any]] = None) -> Run:
        """Ask an ended run (completed, stopped or failed) a follow-up question: it runs again
        on the budgets it has left (or those raised here) and writes a new report."""
        body = _with_budgets({"question": question}, budgets)
        return Run.from_dict(self._send("POST", _run_path(run_id, "/follow-up"), body))

    def report(self, run_id: str) -> Report:
        return self._call(get_runs_id_report.sync_detailed, run_id)

    def deliveries(self, run_id: str) -> List[DeliveryView]:
        """The run's webhook deliveries, oldest first: state, attempts, last error."""
        return list(self._call(get_runs_id_deliveries.sync_detailed, run_id).deliveries)

    def doc(self, run_id: str, path: str) -> Doc:
        return self._call(get_runs_id_docs_path.sync_detailed, run_id, path)

    # Events

    def events_page(
        self, run_id: str, after: int = 0, wait: Optional[int] = None, limit: Optional[int] = None
    ) -> EventsPage:
        """One page of a run's log after seq ``after``; with ``wait`` (seconds) it long-polls."""
        q = _events_query(after, wait, limit)
        return EventsPage.from_dict(self._send("GET", _run_path(run_id, "/events"), params=q))

    def events(
        self,
        run_id: str,
        after: int = 0,
        transport: str = "auto",
        on_state: Optional[Callable[[str], None]] = None,
    ) -> Iterator[Event]:
        """A run's events in order, live, until the run settles (ends or waits on someone).

        ``transport``: ``sse`` (server-sent events), ``poll`` (long-poll, e.g. behind API
        Gateway) or ``auto`` (SSE, falling back to long-poll where the server cannot stream).
        A dropped connection or a restarted server is resumed after the last seq seen, so no
        event is missed or yielded twice; ``on_state`` hears ``reconnecting`` and ``live``.
        Stop early by leaving the loop; resume later with ``after=<last seq>``.
        """
        seq = after
        backoff = self.retry
        while True:
            try:
                batches = self._poll(run_id, seq, on_state) if transport == "poll" else self._sse(run_id, seq, on_state)
                for e in batches:
                    if e.seq <= seq:
                        continue
                    seq = e.seq
                    backoff = self.retry
                    yield e
                # The stream ends when the run settles; make sure that is why it ended.
                run = self.get_run(run_id)
                if _status(run.status) in SETTLED and run.event_seq <= seq:
                    return
            except _NoStream:
                if transport != "auto":
                    raise LongrunError(0, "This server cannot stream events", "use transport='poll'") from None
                transport = "poll"
            except LongrunError as e:
                # The run is gone or not yours, or the token is bad: retrying will not help.
                if 400 <= e.status < 500 and e.status not in (408, 429):
                    raise
                self._reconnecting(on_state)
                time.sleep(backoff)
                backoff = min(backoff * 2, 8.0)
            except (httpx.TransportError, httpx.StreamError):
                self._reconnecting(on_state)
                time.sleep(backoff)
                backoff = min(backoff * 2, 8.0)

    @staticmethod
    def _reconnecting(on_state: Optional[Callable[[str], None]]) -> None:
        if on_state:
            on_state("reconnecting")

    def _sse(self, run_id: str, after: int, on_state: Optional[Callable[[str], None]]) -> Iterator[Event]:
        http = self.api.get_httpx_client()
        headers = {"accept": "text/event-stream", "last-event-id": str(after)}
        url = _run_path(run_id, "/stream")
        with http.stream("GET", url, params={"after": after}, headers=headers) as res:
            kind = res.headers.get("content-type", "")
            if res.status_code >= 400:
                raise _stream_problem(res.status_code, res.read(), kind)
            if "text/event-stream" not in kind:
                raise _NoStream()
            if on_state:
                on_state("live")
            yield from _sse_events(res.iter_lines())

    def _poll(self, run_id: str, after: int, on_state: Optional[Callable[[str], None]]) -> Iterator[Event]:
        seq = after
        while True:
            page = self.events_page(run_id, after=seq, wait=20)
            if on_state:
                on_state("live")
            for e in page.events:
                seq = max(seq, e.seq)
                yield e
            if page.events:
                continue
            run = self.get_run(run_id)
            if _status(run.status) in SETTLED and run.event_seq <= seq:
                return


class AsyncLongrun(_Base):
    """The same client on asyncio: every call is awaited, and ``runs`` and ``events`` are
    async iterators::

        async with AsyncLongrun(url, token=token) as lr:
            run = await lr.create_run({"objective": "…"})
            async for event in lr.events(run.id):
                ...
    """

    async def _call(self, f: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return _checked(await f(*args, client=self.api, **kwargs))
        except httpx.TransportError as e:
            raise Unreachable(0, "The API cannot be reached", str(e)) from e

    async def _send(self, method: str, path: str, body: Any = None, **kwargs: Any) -> Any:
        try:
            res = await self.api.get_async_httpx_client().request(method, path, json=body, **kwargs)
        except httpx.TransportError as e:
            raise Unreachable(0, "The API cannot be reached", str(e)) from e
        return _answer(res)

    async def __aenter__(self) -> "AsyncLongrun":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.api.get_async_httpx_client().aclose()

    async def create_run(
        self, body: Body, *, idempotency_key: Optional[str] = None, attempts: int = 3
    ) -> Run:
        key = idempotency_key or str(uuid.uuid4())
        for attempt in range(1, attempts + 1):
            try:
                answer = await self._send("POST", "/v1/runs", _as_json(body), headers={"Idempotency-Key": key})
                return Run.from_dict(answer)
            except LongrunError as e:
                if e.status not in _RETRYABLE or attempt == attempts:
                    raise
                await asyncio.sleep(self.retry * 2 ** (attempt - 1))
        raise AssertionError("unreachable")

    async def get_run(self, run_id: str) -> Run:
        return await self._call(get_runs_id.asyncio_detailed, run_id)

    async def list_runs_page(
        self,
        status: Optional[str] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> GetRunsResponse200:
        return await self._call(
            get_runs.asyncio_detailed,
            status=_query_status(status),
            limit=UNSET if limit is None else limit,
            cursor=UNSET if cursor is None else cursor,
        )

    async def runs(self, status: Optional[str] = None, page_size: Optional[int] = None) -> AsyncIterator[RunSummary]:
        cursor: Optional[str] = None
        while True:
            page = await self.list_runs_page(status, page_size, cursor)
            for r in page.runs:
                yield r
            cursor = page.next_cursor if isinstance(page.next_cursor, str) else None
            if not cursor:
                return

    async def cancel(self, run_id: str) -> Run:
        return await self._call(post_runs_id_cancel.asyncio_detailed, run_id)

    async def pause(self, run_id: str) -> Run:
        return await self._call(post_runs_id_pause.asyncio_detailed, run_id)

    async def respond(self, run_id: str, answer: str = "", approve: Optional[bool] = None) -> Run:
        body: Dict[str, Any] = {"answer": answer}
        if approve is not None:
            body["approve"] = approve
        return Run.from_dict(await self._send("POST", _run_path(run_id, "/respond"), body))

    async def message(self, run_id: str, text: str) -> Run:
        return Run.from_dict(await self._send("POST", _run_path(run_id, "/messages"), {"text": text}))

    async def continue_run(self, run_id: str, budgets: Optional[Dict[str, Any]] = None) -> Run:
        return Run.from_dict(await self._send("POST", _run_path(run_id, "/continue"), _with_budgets({}, budgets)))

    async def follow_up(self, run_id: str, question: str, budgets: Optional[Dict[str, Any]] = None) -> Run:
        body = _with_budgets({"question": question}, budgets)
        return Run.from_dict(await self._send("POST", _run_path(run_id, "/follow-up"), body))

    async def report(self, run_id: str) -> Report:
        return await self._call(get_runs_id_report.asyncio_detailed, run_id)

    async def deliveries(self, run_id: str) -> List[DeliveryView]:
        return list((await self._call(get_runs_id_deliveries.asyncio_detailed, run_id)).deliveries)

    async def doc(self, run_id: str, path: str) -> Doc:
        return await self._call(get_runs_id_docs_path.asyncio_detailed, run_id, path)

    async def events_page(
        self, run_id: str, after: int = 0, wait: Optional[int] = None, limit: Optional[int] = None
    ) -> EventsPage:
        q = _events_query(after, wait, limit)
        return EventsPage.from_dict(await self._send("GET", _run_path(run_id, "/events"), params=q))

    async def events(
        self,
        run_id: str,
        after: int = 0,
        transport: str = "auto",
        on_state: Optional[Callable[[str], None]] = None,
    ) -> AsyncIterator[Event]:
        """As :meth:`Longrun.events`, as an async iterator."""
        seq = after
        backoff = self.retry
        while True:
            try:
                batches = self._poll(run_id, seq, on_state) if transport == "poll" else self._sse(run_id, seq, on_state)
                async for e in batches:
                    if e.seq <= seq:
                        continue
                    seq = e.seq
                    backoff = self.retry
                    yield e
                run = await self.get_run(run_id)
                if _status(run.status) in SETTLED and run.event_seq <= seq:
                    return
            except _NoStream:
                if transport != "auto":
                    raise LongrunError(0, "This server cannot stream events", "use transport='poll'") from None
                transport = "poll"
            except LongrunError as e:
                if 400 <= e.status < 500 and e.status not in (408, 429):
                    raise
                if on_state:
                    on_state("reconnecting")
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 8.0)
            except (httpx.TransportError, httpx.StreamError):
                if on_state:
                    on_state("reconnecting")
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 8.0)

    async def _sse(self, run_id: str, after: int, on_state: Optional[Callable[[str], None]]) -> AsyncIterator[Event]:
        http = self.api.get_async_httpx_client()
        headers = {"accept": "text/event-stream", "last-event-id": str(after)}
        url = _run_path(run_id, "/stream")
        async with http.stream("GET", url, params={"after": after}, headers=headers) as res:
            kind = res.headers.get("content-type", "")
            if res.status_code >= 400:
                raise _stream_problem(res.status_code, await res.aread(), kind)
            if "text/event-stream" not in kind:
                raise _NoStream()
            if on_state:
                on_state("live")
            data: List[str] = []
            async for line in res.aiter_lines():
                if line == "":
                    if data:
                        yield Event.from_dict(json.loads("\n".join(data)))
                        data = []
                elif line.startswith("data:"):
                    data.append(line[5:].lstrip())

    async def _poll(self, run_id: str, after: int, on_state: Optional[Callable[[str], None]]) -> AsyncIterator[Event]:
        seq = after
        while True:
            page = await self.events_page(run_id, after=seq, wait=20)
            if on_state:
                on_state("live")
            for e in page.events:
                seq = max(seq, e.seq)
                yield e
            if page.events:
                continue
            run = await self.get_run(run_id)
            if _status(run.status) in SETTLED and run.event_seq <= seq:
                return


__all__: Tuple[str, ...] = ("Longrun", "AsyncLongrun", "ENDED", "SETTLED")
