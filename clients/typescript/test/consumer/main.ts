// A user's program on @longrun/client, installed from its npm pack tarball. The same file is
// compiled as an ES module and as CommonJS (package.json `type` decides). Against LONGRUN_URL
// with LONGRUN_TOKEN: create a run, stream its first events, resume after the last one seen,
// page through the runs, and read a 404 as a typed error; prints what it saw as one JSON line.
import { createHmac } from "node:crypto";

import { LongrunClient, LongrunError, verifyWebhook, type Run, type RunEvent, type RunSummary } from "@longrun/client";

// The package's types are in force (not `any`): a run's objective is a string.
// @ts-expect-error objective must be a string
const wrong: Parameters<LongrunClient["createRun"]>[0] = { objective: 42 };

async function main(): Promise<void> {
  const baseUrl = process.env.LONGRUN_URL;
  if (!baseUrl) throw new Error("LONGRUN_URL is not set");
  const client = new LongrunClient({ baseUrl, token: process.env.LONGRUN_TOKEN });

  const older: Run = await client.createRun({ objective: "the older run", budgets: { max_iterations: 1 } });
  const run: Run = await client.createRun({ objective: "notes", budgets: { max_iterations: 3 } });

  // Stream, stop after two events, then resume after the last one seen.
  const streamed: RunEvent[] = [];
  for await (const e of client.events(run.id, { transport: "sse" })) {
    streamed.push(e);
    if (streamed.length === 2) break;
  }
  const last = streamed[streamed.length - 1];
  if (!last) throw new Error("the stream yielded nothing");
  const resumed: RunEvent[] = [];
  for await (const e of client.events(run.id, { after: last.seq })) resumed.push(e);
  const done: Run = await client.getRun(run.id);
  // The type narrows the payload: a committed iteration's summary is a string.
  const summaries: string[] = [];
  for (const e of resumed) if (e.type === "iteration_committed") summaries.push(e.payload.summary);

  // Page through every run, one per page.
  const paged: RunSummary[] = [];
  for await (const r of client.listRuns({ pageSize: 1 })) paged.push(r);
  const firstPage = await client.listRunsPage({ limit: 1 });

  // A run that does not exist: a typed problem.
  let notFound: { status: number; title: string } | undefined;
  try {
    await client.getRun(`${run.id}0`);
  } catch (e) {
    if (e instanceof LongrunError) notFound = { status: e.status, title: e.title };
    else throw e;
  }

  const body = JSON.stringify({ run_id: run.id, status: done.status });
  const signature = `sha256=${createHmac("sha256", "consumer-secret-0123").update(body).digest("hex")}`;

  console.log(JSON.stringify({
    module: typeof require === "function" ? "commonjs" : "esm",
    older: older.id,
    created: run.id,
    streamed: streamed.map((e) => e.seq),
    resumed: resumed.map((e) => e.seq),
    status: done.status,
    event_seq: done.event_seq,
    last_type: resumed[resumed.length - 1]?.type ?? null,
    summaries,
    paged: paged.map((r) => r.id),
    first_page: { runs: firstPage.runs.length, next: firstPage.next_cursor !== null },
    not_found: notFound ?? null,
    webhook: await verifyWebhook("consumer-secret-0123", body, signature),
    webhook_tampered: await verifyWebhook("consumer-secret-0123", `${body} `, signature),
  }));
}

void wrong;
main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
