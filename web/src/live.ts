// Follows a run's event log through the client's `events` iterator: SSE where the server
// streams (`longrun serve`), long-poll where it cannot (API Gateway); a reconnect resumes
// after the last seq seen, so no event is lost or shown twice.

import type { Api, RunEvent } from "./api";
import type { ConsoleConfig } from "./config";

export type LiveState = "live" | "reconnecting" | "settled";

export class Follower {
  private abort = new AbortController();
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
    this.abort.abort();
  }

  private async loop() {
    try {
      const events = this.api.events(this.runId, {
        after: this.seq,
        transport: this.config.live === "sse" ? "sse" : "poll",
        signal: this.abort.signal,
        onState: this.onState,
      });
      for await (const e of events) {
        this.seq = e.seq;
        this.onEvents([e]);
      }
      this.onState("settled");
    } catch {
      // Stopped by the page, or the run is gone (the page shows the API's error on its next load).
    }
  }
}
