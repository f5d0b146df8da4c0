// Follows a run's event log: SSE where the server streams (`longrun serve`), long-poll where it
// cannot (API Gateway). Either way a reconnect resumes after the last seq seen, so no event is
// lost or shown twice.

import { Api, type RunEvent } from "./api";
import { currentToken } from "./auth";
import type { ConsoleConfig } from "./config";

export type LiveState = "live" | "reconnecting" | "settled";

export class Follower {
  private abort = new AbortController();
  private stopped = false;
  seq: number;

  constructor(
    private api: Api,
    private config: ConsoleConfig,
    private runId: string,
    after: number,
    private onEvents: (events: RunEvent[]) => void,
    private onState: (s: LiveState) => void,
  ) {
    this.seq = after;
    void this.loop();
  }

  stop() {
    this.stopped = true;
    this.abort.abort();
  }

  private deliver(events: RunEvent[]) {
    const fresh = events.filter((e) => e.seq > this.seq);
    if (!fresh.length) return;
    this.seq = fresh[fresh.length - 1].seq;
    this.onEvents(fresh);
  }

  private async loop() {
    let backoff = 500;
    while (!this.stopped) {
      try {
        this.onState("live");
        const settled = this.config.live === "sse" ? await this.sse() : await this.poll();
        backoff = 500;
        if (settled) {
          this.onState("settled");
          return;
        }
      } catch (e) {
        if (this.stopped) return;
        this.onState("reconnecting");
        await new Promise((r) => setTimeout(r, backoff));
        backoff = Math.min(backoff * 2, 8000);
      }
    }
  }

  /** One long-poll; returns false so the loop asks again (the page stops it when the run settles). */
  private async poll(): Promise<boolean> {
    const page = await this.api.events(this.runId, this.seq, 20, this.abort.signal);
    this.deliver(page.events);
    return false;
  }

  /** Reads the stream until the server ends it, which it does once the run settles. */
  private async sse(): Promise<boolean> {
    const headers: Record<string, string> = { accept: "text/event-stream", "last-event-id": String(this.seq) };
    const token = currentToken();
    if (token) headers.authorization = `Bearer ${token}`;
    const res = await fetch(this.api.url(`/v1/runs/${encodeURIComponent(this.runId)}/stream?after=${this.seq}`), {
      headers, signal: this.abort.signal,
    });
    if (!res.ok || !res.body) throw new Error(`stream answered ${res.status}`);
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return true;
      buffer += value;
      const blocks = buffer.split(/\r?\n\r?\n/);
      buffer = blocks.pop() ?? "";
      const events: RunEvent[] = [];
      for (const block of blocks) {
        const data = block
          .split(/\r?\n/)
          .filter((l) => l.startsWith("data:"))
          .map((l) => l.slice(5).trimStart())
          .join("\n");
        if (data) events.push(JSON.parse(data) as RunEvent);
      }
      this.deliver(events);
    }
  }
}
