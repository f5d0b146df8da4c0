"""The installed client against a real `longrun serve` this file starts on a free loopback
port: create → stream → resume → page → typed 404, with the sync client and the async one;
bodies sent as written (a misspelt budget refused, not dropped); every event the server writes
parsed strictly into its typed payload; `type` where the generator wrote `type_`; and the
package's version and metadata as pip installed them. Run by scripts/python-client from a
folder outside the repository, with the venv the client was pip-installed into; only the
standard library besides the client. $LONGRUN_BIN is the binary."""

import asyncio
import hashlib
import hmac
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import httpx

import longrun
from longrun import AsyncLongrun, Event, Longrun, NotFound, Unauthorized, Unprocessable, verify_webhook
from longrun import events as typed
from longrun.openapi.models import EventKind, Run, RunStatus, RunSummary, StopType

ALICE = "lr_py_alice_token"
BOB = "lr_py_bob_token"

# Never completes: writes a note per iteration, 100 ms per planner call, so a run lasts as many
# iterations as its budget allows.
LOOP = {
    "planner": [
        {
            "content": {
                "status": {
                    "exit_signal": False,
                    "needs_user_input": False,
                    "progress_summary": "note {{iteration}}",
                    "remaining_work": ["more"],
                },
                "tool_calls": [
                    {"name": "doc_write", "args": {"path": "notes/{{iteration}}.md", "content": "n{{iteration}}"}}
                ],
            },
            "usage": {"input_tokens": 10, "output_tokens": 5},
            "latency_ms": 100,
        }
    ]
}


class Server:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="longrun-py-")
        script = os.path.join(self.dir, "loop.json")
        with open(script, "w") as f:
            json.dump(LOOP, f)
        args = [os.environ["LONGRUN_BIN"], "serve", "--port", "0", "--active-limit", "100",
                "--data-dir", os.path.join(self.dir, "data"), "--model", f"script:{script}"]
        env = dict(os.environ, LONGRUN_TOKENS=f"{ALICE}:alice,{BOB}:bob")
        self.child = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, text=True)
        self.base = None
        for line in self.child.stdout:
            m = re.search(r"listening on (http://\S+)", line)
            if m:
                self.base = m.group(1)
                break
        if not self.base:
            raise RuntimeError(f"longrun serve exited with {self.child.wait()}")
        # Keep draining its output so it never blocks on a full pipe.
        threading.Thread(target=lambda: [None for _ in self.child.stdout], daemon=True).start()

    def stop(self):
        self.child.terminate()
        self.child.wait(timeout=20)
        shutil.rmtree(self.dir, ignore_errors=True)


server: Server


def setUpModule():
    global server
    server = Server()


def tearDownModule():
    server.stop()


def seqs(events):
    return [e.seq for e in events]


class Sync(unittest.TestCase):
    def setUp(self):
        self.lr = Longrun(server.base, token=ALICE, retry=0.1)
        self.addCleanup(self.lr.close)

    def test_create_stream_resume_page_and_typed_404(self):
        # Create
        run = self.lr.create_run({"objective": "Sync notes", "budgets": {"max_iterations": 3}})
        self.assertIsInstance(run, Run)
        self.assertTrue(run.id.startswith("run_"))

        # Stream: the first three events, then leave.
        first = []
        for e in self.lr.events(run.id):
            self.assertIsInstance(e, Event)
            self.assertIsInstance(e.payload, typed.Payload)
            first.append(e)
            if len(first) == 3:
                break
        # Resume after the last one seen: the rest, once each, until the run settles.
        rest = list(self.lr.events(run.id, after=first[-1].seq))
        ended = self.lr.get_run(run.id)
        everything = seqs(first + rest)
        self.assertEqual(everything, list(range(1, ended.event_seq + 1)))
        self.assertEqual(ended.status.value, "stopped")
        self.assertEqual(ended.iteration, 3)
        # The long-poll transport yields the same log.
        self.assertEqual(seqs(self.lr.events(run.id, transport="poll")), everything)
        self.assertEqual(seqs(self.lr.events_page(run.id, limit=1000).events), everything)

        # Page: every run once, one per page.
        for i in range(2):
            self.lr.create_run({"objective": f"Sync page {i}", "budgets": {"max_iterations": 1}})
        paged = list(self.lr.runs(page_size=1))
        listed = self.lr.list_runs_page(limit=200)
        self.assertTrue(all(isinstance(r, RunSummary) for r in paged))
        self.assertEqual([r.id for r in paged], [r.id for r in listed.runs])
        self.assertGreaterEqual(len(paged), 3)
        self.assertIn(run.id, [r.id for r in paged])

        # Typed problems: no such run, another user's run, a bad token, a blank objective.
        with self.assertRaises(NotFound) as missing:
            self.lr.get_run("run_does_not_exist")
        self.assertEqual(missing.exception.status, 404)
        self.assertIn("run_does_not_exist", missing.exception.detail)
        with Longrun(server.base, token=BOB) as bob:
            with self.assertRaises(NotFound):
                bob.get_run(run.id)
            with self.assertRaises(NotFound):
                list(bob.events(run.id))
        with Longrun(server.base, token="lr_wrong") as stranger, self.assertRaises(Unauthorized):
            stranger.get_run(run.id)
        with self.assertRaises(Unprocessable) as blank:
            self.lr.create_run({"objective": "   "})
        self.assertIn("objective", str(blank.exception))
        self.assertIsInstance(blank.exception, longrun.LongrunError)

    def test_reading_what_a_run_wrote(self):
        run = self.lr.create_run({"objective": "Two notes", "budgets": {"max_iterations": 2}})
        list(self.lr.events(run.id))
        doc = self.lr.doc(run.id, "notes/2.md")
        self.assertEqual(doc.content, "n2")
        report = self.lr.report(run.id)
        self.assertEqual(report.run_id, run.id)
        # The report in its contract's shape: a title with the outcome, the narrative, the last
        # step's line, and the two notes as typed changes.
        self.assertEqual(report.title, "Stopped: Two notes")
        self.assertEqual(report.headline, "note 2")
        self.assertTrue(report.summary.startswith("You asked: Two notes."), report.summary)
        created = [(c.type_.value, c.id) for c in report.what_changed.created]
        self.assertEqual(created, [("document", "notes/1.md"), ("document", "notes/2.md")])
        self.assertEqual(report.metrics.total_tokens, 30)
        self.assertEqual(report.criteria, [], "a run without criteria has no verdicts")
        self.assertEqual(self.lr.deliveries(run.id), [], "no webhooks, no deliveries")
        with self.assertRaises(NotFound):
            self.lr.doc(run.id, "notes/none.md")
        # A message reaches runs that have not ended; this one has.
        with self.assertRaises(longrun.Conflict) as late:
            self.lr.message(run.id, "one more thing")
        self.assertIn("continue", late.exception.detail)

    def test_a_create_whose_answer_is_lost_is_retried_under_its_key_and_makes_one_run(self):
        # A hook that lets the first POST reach the server, then loses its answer.
        keys = []

        def lose_first(response):
            if response.request.method == "POST":
                keys.append(response.request.headers["idempotency-key"])
                if len(keys) == 1:
                    raise httpx.ReadError("connection reset", request=response.request)

        hooks = {"event_hooks": {"response": [lose_first]}}
        with Longrun(server.base, token=ALICE, retry=0.1, httpx_args=hooks) as lr:
            before = len(lr.list_runs_page(limit=200).runs)
            run = lr.create_run({"objective": "Made once, sent twice"})
            after = lr.list_runs_page(limit=200).runs
        self.assertEqual(len(keys), 2)
        self.assertEqual(keys[0], keys[1])
        self.assertEqual(len(after), before + 1)
        self.assertEqual(after[0].id, run.id)


class Bodies(unittest.TestCase):
    def setUp(self):
        self.lr = Longrun(server.base, token=ALICE, retry=0.1)
        self.addCleanup(self.lr.close)

    def test_a_misspelt_budget_is_refused_with_the_servers_problem_not_dropped(self):
        # Act
        with self.assertRaises(Unprocessable) as typo:
            self.lr.create_run({"objective": "Three iterations", "budgets": {"max_iteration": 3}})
        run = self.lr.create_run({"objective": "One iteration", "budgets": {"max_iterations": 1}})
        list(self.lr.events(run.id))
        with self.assertRaises(Unprocessable) as raised:
            self.lr.continue_run(run.id, {"max_iteration": 5})

        # Assert: the server's problem, field named, and nothing started with default budgets.
        e = typo.exception
        self.assertEqual((e.status, e.title), (422, "Invalid request"))
        self.assertIn("unknown field `max_iteration`", e.detail)
        self.assertIn("max_iterations", e.detail)
        self.assertEqual(e.type, "https://longrun.dev/problems/validation")
        self.assertIn("max_iteration", raised.exception.detail)
        self.assertEqual(self.lr.get_run(run.id).budgets.max_iterations, 1)
        objectives = [r.objective for r in self.lr.runs()]
        self.assertNotIn("Three iterations", objectives)

    def test_the_async_client_refuses_the_same_typo(self):
        async def scenario():
            async with AsyncLongrun(server.base, token=ALICE, retry=0.1) as lr:
                await lr.create_run({"objective": "Three, async", "budgets": {"max_iteration": 3}})

        with self.assertRaises(Unprocessable) as typo:
            asyncio.run(scenario())
        self.assertIn("max_iteration", typo.exception.detail)


def wait_for(lr, run_id, ok):
    for _ in range(400):
        run = lr.get_run(run_id)
        if ok(run):
            return run
        time.sleep(0.025)
    raise AssertionError(f"run {run_id} never got there: {run.status}")


def settled(run):
    return str(run.status) in longrun.SETTLED and not run.cancel_requested


class Events(unittest.TestCase):
    def setUp(self):
        self.lr = Longrun(server.base, token=ALICE, retry=0.1)
        self.addCleanup(self.lr.close)

    def drive(self):
        """Runs taken through creation, budgets, continue, follow-up, approval, messages, edits,
        pause and cancel; their events as the server sent them."""
        lr = self.lr
        stopped = lr.create_run({"objective": "Typed events", "budgets": {"max_iterations": 1}})
        wait_for(lr, stopped.id, settled)
        lr.continue_run(stopped.id, {"max_iterations": 2})
        wait_for(lr, stopped.id, lambda r: settled(r) and r.iteration == 2)
        lr.follow_up(stopped.id, "And then?", {"max_iterations": 3})
        wait_for(lr, stopped.id, lambda r: settled(r) and r.iteration == 3)

        approval = lr.create_run({"objective": "Plan first", "permission_mode": "approve_plan", "budgets": {"max_iterations": 3}})
        wait_for(lr, approval.id, lambda r: str(r.status) == "waiting_on_user")
        lr.message(approval.id, "Metric units, please.")
        http = lr.api.get_httpx_client()
        edit = {"objective": "Plan first, edited", "plan": [{"id": "s1", "title": "Outline", "status": "done"}]}
        self.assertEqual(http.patch(f"/v1/runs/{approval.id}", json=edit).status_code, 200)
        lr.respond(approval.id, approve=True)
        wait_for(lr, approval.id, settled)

        paused = lr.create_run({"objective": "Pause me", "budgets": {"max_iterations": 50}})
        lr.pause(paused.id)
        wait_for(lr, paused.id, lambda r: str(r.status) == "paused")
        lr.continue_run(paused.id)
        lr.cancel(paused.id)
        wait_for(lr, paused.id, lambda r: str(r.status) == "canceled")

        raw = []
        for run_id in (stopped.id, approval.id, paused.id):
            raw += http.get(f"/v1/runs/{run_id}/events", params={"limit": 1000}).json()["events"]
        return raw, stopped.id

    def test_every_event_the_server_writes_parses_strictly_into_its_typed_payload(self):
        # Arrange
        raw, stopped = self.drive()

        # Act: strict, so a field either side lacks is a PayloadMismatch.
        parsed = [Event.from_dict(e, strict=True) for e in raw]
        streamed = list(self.lr.events(stopped))

        # Assert
        for e, sent in zip(parsed, raw):
            self.assertIsInstance(e.type, EventKind, sent)
            self.assertIsInstance(e.payload, typed.PAYLOADS[e.type], sent)
            self.assertEqual(e.payload.extra, {}, sent)
            self.assertEqual(e.to_dict(), sent)
        seen = {str(e.type) for e in parsed}
        for kind in ("run_created", "iteration_started", "iteration_cost_update", "iteration_committed", "run_stopped",
                     "run_continued", "follow_up_asked", "run_waiting", "message_posted", "run_patched",
                     "user_responded", "pause_requested", "run_paused", "run_resumed", "cancel_requested", "run_canceled"):
            self.assertIn(kind, seen)
        committed = [e.payload for e in streamed if isinstance(e.payload, typed.IterationCommitted)]
        self.assertEqual([c.iteration for c in committed], [1, 2, 3])
        self.assertIsInstance(committed[0].status, RunStatus)
        ended = [e for e in streamed if e.type == "run_stopped"][-1]
        self.assertEqual(ended.payload.stopping_reason.type, StopType.MAX_ITERATIONS)
        follow = next(e.payload for e in parsed if e.type == "follow_up_asked")
        self.assertEqual((follow.question, follow.superseded.status), ("And then?", RunStatus.STOPPED))
        patched = next(e.payload for e in parsed if e.type == "run_patched")
        self.assertEqual((patched.changed.objective.from_, patched.changed.objective.to), ("Plan first", "Plan first, edited"))
        responded = next(e.payload for e in parsed if e.type == "user_responded")
        self.assertIs(responded.approve, True)

    def test_a_payload_that_is_not_what_its_type_says_is_caught_when_strict_and_kept_when_not(self):
        good = {"run_id": "run_1", "seq": 1, "type": "run_paused", "at": 1, "payload": {"after_iteration": 2}}
        odd = dict(good, payload={"after_iteration": 2, "by": "someone"})
        newer = dict(good, type="run_teleported", payload={"to": "mars"})

        self.assertEqual(Event.from_dict(good, strict=True).payload, typed.RunPaused(after_iteration=2))
        with self.assertRaises(typed.PayloadMismatch):
            Event.from_dict(odd, strict=True)
        with self.assertRaises(typed.PayloadMismatch):
            Event.from_dict(dict(good, payload={}), strict=True)
        self.assertEqual(Event.from_dict(odd).payload.extra, {"by": "someone"})
        self.assertEqual(Event.from_dict(newer).payload, typed.UnknownPayload(data={"to": "mars"}))
        self.assertEqual(Event.from_dict(newer).type, "run_teleported")

    def test_type_reads_as_the_document_says_where_the_generator_wrote_type_(self):
        run = self.lr.create_run({"objective": "Why did it stop?", "budgets": {"max_iterations": 1}})
        events = list(self.lr.events(run.id))
        ended = self.lr.get_run(run.id)

        self.assertEqual([e.type for e in events][-1], "run_stopped")
        self.assertEqual(ended.stopping_reason.type, "max_iterations")
        self.assertIs(ended.stopping_reason.type, ended.stopping_reason.type_)
        self.assertEqual(next(r for r in self.lr.runs() if r.id == run.id).stopping_reason.type, "max_iterations")
        names = {cls.__name__ for cls in longrun._aliases.ALIASED}
        self.assertTrue({"StoppingReason", "Problem", "RunContext", "BusMessage"} <= names, names)


class Package(unittest.TestCase):
    def test_the_version_is_the_binarys_and_the_metadata_is_there_to_publish(self):
        # Arrange
        binary = subprocess.run([os.environ["LONGRUN_BIN"], "--version"], capture_output=True, text=True, check=True)
        meta = importlib.metadata.metadata("longrun-client")

        # Assert
        self.assertEqual(binary.stdout.split()[-1], longrun.__version__)
        self.assertEqual(importlib.metadata.version("longrun-client"), longrun.__version__)
        self.assertEqual(meta["License-Expression"], "Apache-2.0")
        self.assertEqual(meta["Requires-Python"], ">=3.11")
        self.assertIn("longrun", meta["Keywords"])
        urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL"))
        self.assertTrue(urls["Repository"].startswith("https://github.com/"), urls)
        files = [str(f) for f in importlib.metadata.files("longrun-client")]
        self.assertTrue(any(f.endswith("LICENSE") for f in files), files)
        self.assertIn("longrun/events.py", files)


class Async(unittest.TestCase):
    def test_create_stream_resume_page_and_typed_404(self):
        asyncio.run(self.scenario())

    async def scenario(self):
        async with AsyncLongrun(server.base, token=ALICE, retry=0.1) as lr:
            run = await lr.create_run({"objective": "Async notes", "budgets": {"max_iterations": 3}})
            self.assertIsInstance(run, Run)

            first = []
            async for e in lr.events(run.id):
                first.append(e)
                if len(first) == 2:
                    break
            rest = [e async for e in lr.events(run.id, after=first[-1].seq)]
            ended = await lr.get_run(run.id)
            everything = seqs(first + rest)
            self.assertEqual(everything, list(range(1, ended.event_seq + 1)))
            self.assertEqual(ended.status.value, "stopped")
            self.assertEqual(seqs([e async for e in lr.events(run.id, transport="poll")]), everything)

            await lr.create_run({"objective": "Async page", "budgets": {"max_iterations": 1}})
            paged = [r async for r in lr.runs(page_size=2)]
            listed = await lr.list_runs_page(limit=200)
            self.assertEqual([r.id for r in paged], [r.id for r in listed.runs])
            self.assertGreaterEqual(len(paged), 2)

            with self.assertRaises(NotFound) as missing:
                await lr.get_run("run_does_not_exist")
            self.assertEqual(missing.exception.status, 404)
            with self.assertRaises(NotFound):
                [e async for e in lr.events("run_does_not_exist")]


class Webhooks(unittest.TestCase):
    def test_a_signed_delivery_verifies_and_a_changed_one_does_not(self):
        secret = "0123456789abcdef-hook"
        body = json.dumps({"id": "run_1#3#completed", "run_id": "run_1", "status": "completed"})
        sign = lambda s, b: "sha256=" + hmac.new(s.encode(), b.encode(), hashlib.sha256).hexdigest()  # noqa: E731
        self.assertTrue(verify_webhook(secret, body, sign(secret, body)))
        self.assertTrue(verify_webhook(secret.encode(), body.encode(), sign(secret, body).upper().replace("SHA256", "sha256")))
        self.assertFalse(verify_webhook(secret, body.replace("completed", "failed"), sign(secret, body)))
        self.assertFalse(verify_webhook("another-secret-0123", body, sign(secret, body)))
        for header in (None, "", "sha256=", "sha1=abc", sign(secret, body)[:-2], sign(secret, body) + "00"):
            self.assertFalse(verify_webhook(secret, body, header), header)


if __name__ == "__main__":
    # Not the source tree: the client as pip installed it.
    assert "site-packages" in longrun.__file__, longrun.__file__
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)
