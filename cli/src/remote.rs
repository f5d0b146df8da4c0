//! Client commands against a running API. Text for a person by default; with `--json`, the
//! API's JSON and nothing else on stdout (one event a line when following).

use std::time::Duration;

use anyhow::{Context, Result, bail};
use longrun::args::{BudgetFlags, Command};
use longrun::exit;
use longrun_domain::run::RunStatus;
use serde_json::{Value, json};

struct Client {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Client {
    async fn call(
        &self, method: reqwest::Method, path: &str, body: Option<Value>,
    ) -> Result<Value> {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req
            .send()
            .await
            .with_context(|| format!("cannot reach {}", self.base))?;
        let status = resp.status();
        let text = resp.text().await?;
        let v: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        if !status.is_success() {
            let detail = v["detail"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string());
            bail!("{} ({})", detail, status.as_u16());
        }
        Ok(v)
    }

    async fn get(&self, path: &str) -> Result<Value> {
        self.call(reqwest::Method::GET, path, None).await
    }

    async fn post(&self, path: &str, body: Value) -> Result<Value> {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }
}

fn token(explicit: Option<String>) -> Result<String> {
    if let Some(t) = explicit {
        return Ok(t);
    }
    std::fs::read_to_string(".longrun/token")
        .map(|t| t.trim().to_string())
        .context("no token: pass --token, set LONGRUN_TOKEN, or run `longrun serve` here once")
}

fn print(v: &Value, json: bool, text: impl FnOnce(&Value) -> String) {
    if json {
        outln!("{}", serde_json::to_string_pretty(v).unwrap_or_default());
    } else {
        outln!("{}", text(v));
    }
}

fn run_line(r: &Value) -> String {
    format!(
        "{}  {} it {:>3}  {:>8} tok  ${:.6}  {}",
        r["id"].as_str().unwrap_or(""),
        crate::out::status(r["status"].as_str().unwrap_or(""), 16),
        r["iteration"],
        r["tokens"],
        r["cost_usd"]
            .as_f64()
            .or_else(|| r["metrics"]["cost_usd"].as_f64())
            .unwrap_or(0.0),
        r["objective"]
            .as_str()
            .unwrap_or("")
            .chars()
            .take(60)
            .collect::<String>()
    )
}

fn event_line(e: &Value) -> String {
    let p = &e["payload"];
    let detail = match e["type"].as_str().unwrap_or("") {
        "iteration_cost_update" => format!(
            "iteration {} · {} · run {} tokens · ${:.6}",
            p["iteration"],
            p["role"].as_str().unwrap_or(""),
            p["run_tokens"],
            p["run_cost_usd"].as_f64().unwrap_or(0.0)
        ),
        "iteration_committed" => format!(
            "iteration {} → {} · {}",
            p["iteration"],
            crate::out::status(p["status"].as_str().unwrap_or(""), 0),
            p["summary"].as_str().unwrap_or("")
        ),
        "iteration_started" => format!("iteration {}", p["iteration"]),
        _ => p.to_string(),
    };
    format!(
        "#{:<5} {:<22} {}",
        e["seq"],
        e["type"].as_str().unwrap_or(""),
        detail
    )
}

/// How a run settled, from the event that says so: `None` for an event that does not end a
/// wait.
fn settled(e: &Value) -> Option<RunStatus> {
    match e["type"].as_str()? {
        "run_completed" => Some(RunStatus::Completed),
        "run_stopped" => Some(RunStatus::Stopped),
        "run_canceled" => Some(RunStatus::Canceled),
        "run_failed" => Some(RunStatus::Failed),
        "run_waiting" if e["payload"].get("children").is_some() => {
            Some(RunStatus::WaitingOnChildren)
        }
        "run_waiting" => Some(RunStatus::WaitingOnUser),
        _ => None,
    }
}

/// Prints the run's events until it settles; the exit code for how it did.
async fn follow(c: &Client, id: &str, mut after: u64, json: bool) -> Result<u8> {
    loop {
        let page = c
            .get(&format!("/v1/runs/{id}/events?after={after}&wait=20"))
            .await?;
        let events = page["events"].as_array().cloned().unwrap_or_default();
        for e in &events {
            if json {
                outln!("{e}");
            } else {
                outln!("{}", event_line(e));
            }
            after = e["seq"].as_u64().unwrap_or(after);
            if let Some(status) = settled(e) {
                return Ok(exit::for_status(status));
            }
        }
    }
}

/// Runs a client command; its exit code (`longrun::exit`).
pub async fn run(
    cmd: Command, api_url: &str, token_flag: Option<String>, json: bool,
) -> Result<u8> {
    let c = Client {
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()?,
        base: api_url.trim_end_matches('/').to_string(),
        token: token(token_flag)?,
    };
    let done = match cmd {
        Command::Run {
            objective,
            budgets,
            models,
            follow: f,
            mode,
            tools,
            agent,
            criteria,
            no_grading,
            grader_model,
            ..
        } => {
            let mut body = json!({"objective": objective, "budgets": budgets.input()});
            if let Some(a) = agent {
                body["agent"] = json!(a);
            }
            if !criteria.is_empty() {
                body["completion_criteria"] = json!(criteria);
            }
            if let Some(g) = crate::grading(no_grading, grader_model) {
                body["grading"] = json!(g);
            }
            if !tools.is_empty() {
                body["allowed_tools"] = json!(tools);
            }
            if !models.is_empty() {
                body["models"] = json!(models);
            }
            if let Some(m) = mode {
                body["permission_mode"] = json!(m);
            }
            return start(&c, body, f, json).await;
        }
        Command::Status { run_id } => status(&c, &run_id, json).await,
        Command::List { status } => list(&c, status, json).await,
        Command::Events {
            run_id,
            after,
            follow: true,
        } => return follow(&c, &run_id, after, json).await,
        Command::Events { run_id, after, .. } => events(&c, &run_id, after, json).await,
        Command::Cancel { run_id } => cancel(&c, &run_id, json).await,
        Command::Respond {
            run_id,
            answer,
            approve,
            reject,
        } => {
            let mut body = json!({"answer": answer});
            if approve || reject {
                body["approve"] = json!(approve);
            }
            let r = c.post(&format!("/v1/runs/{run_id}/respond"), body).await?;
            print(&r, json, |r| {
                format!("{} is {}", run_id, r["status"].as_str().unwrap_or(""))
            });
            Ok(())
        }
        Command::Message { run_id, text } => {
            let r = c
                .post(
                    &format!("/v1/runs/{run_id}/messages"),
                    json!({"text": text}),
                )
                .await?;
            print(&r, json, |r| {
                let status = r["status"].as_str().unwrap_or("");
                format!("{run_id} ({status}) reads it at its next iteration")
            });
            Ok(())
        }
        Command::Pause { run_id } => pause(&c, &run_id, json).await,
        Command::Edit {
            run_id,
            objective,
            steps,
        } => edit(&c, &run_id, objective, &steps, json).await,
        Command::Continue { run_id, budgets } => continue_run(&c, &run_id, &budgets, json).await,
        Command::FollowUp {
            run_id,
            question,
            budgets,
        } => follow_up(&c, &run_id, &question, &budgets, json).await,
        Command::Report { run_id } => report(&c, &run_id, json).await,
        Command::Workspace { run_id, path } => workspace(&c, &run_id, path, json).await,
        Command::Serve { .. }
        | Command::Demo { .. }
        | Command::Openapi
        | Command::Export { .. }
        | Command::Import { .. }
        | Command::Completions { .. }
        | Command::Man { .. }
        | Command::Runner(_) => {
            unreachable!("handled in main")
        }
    };
    done.map(|()| 0)
}

/// Creates the run; with `follow_it`, prints its events until it settles (with `--json` the
/// events alone, one a line: each names its run) and exits with the code for how it did.
async fn start(c: &Client, body: Value, follow_it: bool, json: bool) -> Result<u8> {
    let run = c.post("/v1/runs", body).await?;
    let id = run["id"].as_str().unwrap_or_default().to_string();
    if follow_it {
        if !json {
            outln!("started {id} ({})", run["link"].as_str().unwrap_or(""));
        }
        return follow(c, &id, 0, json).await;
    }
    print(&run, json, |r| {
        format!("started {id} ({})", r["link"].as_str().unwrap_or(""))
    });
    Ok(0)
}

/// The report as `run --embedded` prints it; as the API's JSON with `--json`.
async fn report(c: &Client, run_id: &str, json: bool) -> Result<()> {
    let r = c.get(&format!("/v1/runs/{run_id}/report")).await?;
    if json {
        print(&r, true, |_| String::new());
        return Ok(());
    }
    let report: longrun_domain::report::Report = serde_json::from_value(r)
        .context("the server's report is not one this longrun can read (a newer server?)")?;
    crate::print_report(&report, false)
}

async fn status(c: &Client, run_id: &str, json: bool) -> Result<()> {
    let r = c.get(&format!("/v1/runs/{run_id}")).await?;
    print(&r, json, |r| {
        format!(
            "{}\nstatus {} · iteration {} · {} tokens · ${:.6}\nstopping reason: {}",
            run_line(r),
            crate::out::status(r["status"].as_str().unwrap_or(""), 0),
            r["iteration"],
            r["tokens"],
            r["metrics"]["cost_usd"].as_f64().unwrap_or(0.0),
            r["stopping_reason"]
        )
    });
    Ok(())
}

async fn list(c: &Client, status: Option<String>, json: bool) -> Result<()> {
    let q = status.map(|s| format!("?status={s}")).unwrap_or_default();
    let v = c.get(&format!("/v1/runs{q}")).await?;
    print(&v, json, |v| {
        let mut lines: Vec<String> = v["runs"]
            .as_array()
            .map(|a| a.iter().map(run_line).collect())
            .unwrap_or_default();
        lines.push(format!("active {} of {}", v["active"], v["active_limit"]));
        lines.join("\n")
    });
    Ok(())
}

async fn events(c: &Client, run_id: &str, after: u64, json: bool) -> Result<()> {
    let v = c
        .get(&format!(
            "/v1/runs/{run_id}/events?after={after}&limit=1000"
        ))
        .await?;
    print(&v, json, |v| {
        v["events"]
            .as_array()
            .map(|a| a.iter().map(event_line).collect::<Vec<_>>().join("\n"))
            .unwrap_or_default()
    });
    Ok(())
}

/// Continues a stopped run with raised budgets, or resumes a paused one.
async fn continue_run(c: &Client, run_id: &str, budgets: &BudgetFlags, json: bool) -> Result<()> {
    let body = json!({"budgets": budgets.input()});
    let r = c.post(&format!("/v1/runs/{run_id}/continue"), body).await?;
    print(&r, json, |r| {
        format!("{} is {}", run_id, r["status"].as_str().unwrap_or(""))
    });
    Ok(())
}

/// Asks an ended run a follow-up question.
async fn follow_up(
    c: &Client, run_id: &str, question: &str, budgets: &BudgetFlags, json: bool,
) -> Result<()> {
    let body = json!({"question": question, "budgets": budgets.input()});
    let r = c
        .post(&format!("/v1/runs/{run_id}/follow-up"), body)
        .await?;
    print(&r, json, |r| {
        let status = r["status"].as_str().unwrap_or("");
        format!("{run_id} ({status}) takes up the question at its next iteration")
    });
    Ok(())
}

async fn cancel(c: &Client, run_id: &str, json: bool) -> Result<()> {
    let later = " (cancel requested; stops before its next model call)";
    act(c, run_id, "cancel", json, |r| {
        (r["cancel_requested"] == true && r["status"] == "running").then_some(later)
    })
    .await
}

async fn pause(c: &Client, run_id: &str, json: bool) -> Result<()> {
    let later = " (pauses once its current iteration is committed)";
    act(c, run_id, "pause", json, |r| {
        (r["pause_requested"] == true).then_some(later)
    })
    .await
}

/// `POST /v1/runs/{id}/{action}`, then the run's status, and `later` when the action waits
/// for the iteration in flight.
async fn act<'a>(
    c: &Client, run_id: &str, action: &str, json: bool, later: impl Fn(&Value) -> Option<&'a str>,
) -> Result<()> {
    let r = c
        .post(&format!("/v1/runs/{run_id}/{action}"), json!({}))
        .await?;
    print(&r, json, |r| {
        format!(
            "{} is {}{}",
            run_id,
            r["status"].as_str().unwrap_or(""),
            later(r).unwrap_or("")
        )
    });
    Ok(())
}

async fn edit(
    c: &Client, run_id: &str, objective: Option<String>, steps: &[String], json: bool,
) -> Result<()> {
    let plan = steps
        .iter()
        .map(|s| parse_step(s))
        .collect::<Result<Vec<_>>>()?;
    let mut body = json!({"plan": plan});
    if let Some(o) = objective {
        body["objective"] = json!(o);
    }
    let r = c
        .call(
            reqwest::Method::PATCH,
            &format!("/v1/runs/{run_id}"),
            Some(body),
        )
        .await?;
    print(&r, json, |_| {
        format!("{run_id}: edit recorded; it applies from the next iteration")
    });
    Ok(())
}

async fn workspace(c: &Client, run_id: &str, path: Option<String>, json: bool) -> Result<()> {
    if let Some(path) = path {
        let d = c
            .get(&format!(
                "/v1/runs/{run_id}/docs/{}",
                path.trim_start_matches('/')
            ))
            .await?;
        print(&d, json, |d| {
            d["content"].as_str().unwrap_or("").to_string()
        });
        return Ok(());
    }
    let w = c.get(&format!("/v1/runs/{run_id}/workspace")).await?;
    print(&w, json, |w| {
        w["docs"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|d| {
                        format!(
                            "{:<40} v{} {:>6} B  {}",
                            d["path"].as_str().unwrap_or(""),
                            d["version"],
                            d["bytes"],
                            d["title"].as_str().unwrap_or("")
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default()
    });
    Ok(())
}

/// `id:status:title` → a plan step edit.
fn parse_step(spec: &str) -> Result<Value> {
    let mut parts = spec.splitn(3, ':');
    let (Some(id), Some(status), Some(title)) = (parts.next(), parts.next(), parts.next()) else {
        anyhow::bail!("--step `{spec}` must be id:status:title");
    };
    if !["pending", "in_progress", "done", "blocked"].contains(&status) {
        anyhow::bail!("--step `{spec}`: status must be pending, in_progress, done or blocked");
    }
    Ok(json!({"id": id.trim(), "status": status, "title": title.trim()}))
}
