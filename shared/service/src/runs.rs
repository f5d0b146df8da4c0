//! The run use cases: create, cancel, respond, continue, pause, patch. Transport-free: the
//! HTTP API, the MCP server, the sweeper and the simulator call these.

use longrun_domain::change;
use longrun_domain::run::{Budgets, BudgetsInput, Run, RunPatch, RunStatus};
use longrun_domain::{McpServer, is_blank};
use longrun_ports::{CatalogExt, StepReason};

use crate::error::ServiceError;
use crate::platform::Platform;

/// Whether `name` is `{server}.{tool}` for one of these servers: a run's `allowed_tools` may
/// name MCP tools before any listing.
pub fn names_a_server_tool(servers: &[McpServer], name: &str) -> bool {
    name.split_once('.')
        .is_some_and(|(server, tool)| !tool.is_empty() && servers.iter().any(|s| s.name == server))
}

/// The body of `POST /v1/runs`; a schedule's template has the same shape.
pub type CreateRun = longrun_domain::RunTemplate;

/// Validates and creates a run, then enqueues its first iteration.
pub async fn create_run(p: &Platform, user: &str, req: CreateRun) -> Result<Run, ServiceError> {
    let id = format!("run_{}", uuid::Uuid::new_v4().simple());
    create_run_with_id(p, user, req, id).await
}

/// `create_run` under a caller-chosen id: creating the same id twice is a 409, which is how a
/// schedule occurrence starts at most one run.
pub async fn create_run_with_id(
    p: &Platform, user: &str, req: CreateRun, id: String,
) -> Result<Run, ServiceError> {
    let run = prepare_run(p, user, req, id)?;
    if let Some(allowed) = &run.allowed_tools {
        check_tools_exist(p, user, allowed).await?;
    }
    let run = p
        .store
        .create_run(change::create(run, p.config.active_limit))
        .await?;
    // If this send fails the run stays queued; the sweeper re-enqueues it.
    p.follow_up.enqueue_next(&run, StepReason::Start).await?;
    Ok(run)
}

/// Every name in `allowed_tools` is a built-in, one of the user's registered tools or
/// `{server}.{tool}` for one of the user's MCP servers (its listing is not asked for here).
/// An unknown name conflicts with the user's tools as they stand (register it, then resend),
/// so it is a 409: the request itself is well formed.
async fn check_tools_exist(
    p: &Platform, user: &str, allowed: &[String],
) -> Result<(), ServiceError> {
    let registered = p.store.tools(user).await?;
    let servers = p.store.mcp_servers(user).await?;
    let known = |name: &str| {
        p.engine.tools.contains(name)
            || registered.iter().any(|t| t.name == name)
            || names_a_server_tool(&servers, name)
    };
    if let Some(unknown) = allowed.iter().find(|n| !known(n)) {
        let mut names: Vec<String> = p
            .engine
            .tools
            .names()
            .into_iter()
            .map(String::from)
            .collect();
        names.extend(registered.iter().map(|t| t.name.clone()));
        names.extend(servers.iter().map(|s| format!("{}.*", s.name)));
        return Err(ServiceError::Conflict(format!(
            "allowed_tools: there is no tool `{unknown}`; tools: {}",
            names.join(", ")
        )));
    }
    Ok(())
}

/// At most this many names in `allowed_tools`.
pub const MAX_ALLOWED_TOOLS: usize = 64;

/// Validates a request into a new queued run; writes nothing.
pub fn prepare_run(
    p: &Platform, user: &str, req: CreateRun, id: String,
) -> Result<Run, ServiceError> {
    let objective = req.objective.trim();
    if is_blank(objective) {
        return Err(ServiceError::Invalid("objective must not be empty".into()));
    }
    if objective.len() > p.config.max_objective_bytes {
        return Err(ServiceError::Invalid(format!(
            "objective is {} bytes; the limit is {} bytes",
            objective.len(),
            p.config.max_objective_bytes
        )));
    }
    let budgets: Budgets = req.budgets.resolve(&p.config.default_budgets)?;
    let thresholds = req.thresholds.unwrap_or_default();
    thresholds.validate()?;
    let mut models: Vec<String> = vec![];
    for m in req.model.iter().chain(&req.models) {
        if !models.contains(m) {
            models.push(m.clone());
        }
    }
    if let (Some(first), Some(listed)) = (&req.model, req.models.first())
        && first != listed
    {
        return Err(ServiceError::Invalid(format!(
            "model `{first}` must also be the first of models (it is `{listed}`)"
        )));
    }
    if models.is_empty() {
        models.push(p.config.default_model().to_string());
    }
    for model in &models {
        if !p.config.models.contains(model) {
            return Err(ServiceError::Invalid(format!(
                "model `{model}` is not available; choose one of: {}",
                p.config.models.join(", ")
            )));
        }
        if budgets.max_cost_usd.is_some() && !p.config.priced_models.contains(model) {
            return Err(ServiceError::Invalid(format!(
                "budgets.max_cost_usd cannot be enforced: no price is known for model `{model}`"
            )));
        }
    }
    let model = models[0].clone();
    let now = p.clock.now_ms();
    let mut run = Run::new(&id, user, objective, &model, budgets, thresholds, now);
    run.permission_mode = req.permission_mode.unwrap_or_default();
    run.completion_criteria = completion_criteria(req.completion_criteria)?;
    if let Some(allowed) = req.allowed_tools {
        if allowed.len() > MAX_ALLOWED_TOOLS || allowed.iter().any(|n| is_blank(n)) {
            return Err(ServiceError::Invalid(format!(
                "allowed_tools must list at most {MAX_ALLOWED_TOOLS} tool names, none empty"
            )));
        }
        run.allowed_tools = Some(allowed);
    }
    if models.len() > 1 {
        run.models = models;
    }
    Ok(run)
}

/// At most this many completion criteria, each at most `MAX_CRITERION_CHARS` characters.
pub const MAX_CRITERIA: usize = 20;
pub const MAX_CRITERION_CHARS: usize = 500;

/// The request's criteria, trimmed, or why they cannot be accepted.
fn completion_criteria(criteria: Vec<String>) -> Result<Vec<String>, ServiceError> {
    if criteria.len() > MAX_CRITERIA {
        return Err(ServiceError::Invalid(format!(
            "completion_criteria lists {} criteria; at most {MAX_CRITERIA} are allowed",
            criteria.len()
        )));
    }
    for (i, c) in criteria.iter().enumerate() {
        let chars = c.chars().count();
        if is_blank(c) || chars > MAX_CRITERION_CHARS {
            return Err(ServiceError::Invalid(format!(
                "completion_criteria[{i}] must be 1 to {MAX_CRITERION_CHARS} characters and not blank, got {chars}"
            )));
        }
    }
    Ok(criteria.into_iter().map(|c| c.trim().to_string()).collect())
}

// The run actions, after the caller's ownership is checked (by the API or MCP); the
// simulator drives these same functions.

pub async fn cancel_run(p: &Platform, id: &str) -> Result<Run, ServiceError> {
    let docs = p.store.docs(id, "", 10_000).await?;
    let now = p.clock.now_ms();
    let run = p
        .store
        .update_run(id, &|r| change::request_cancel(r, &docs, now))
        .await?;
    if run.status == RunStatus::Canceled {
        // Ends its children too, and tells its parent.
        p.follow_up.send(&run).await?;
    }
    Ok(run)
}

pub async fn respond_run(
    p: &Platform, id: &str, answer: &str, approval: change::Approval,
) -> Result<Run, ServiceError> {
    if (is_blank(answer) && approval.is_empty())
        || answer.chars().count() > change::MAX_ANSWER_CHARS
    {
        return Err(ServiceError::Invalid(format!(
            "answer must be 1 to {} characters, or approve / decisions must be given",
            change::MAX_ANSWER_CHARS
        )));
    }
    let answer = answer.trim();
    let docs = p.store.docs(id, "", 10_000).await?;
    let now = p.clock.now_ms();
    let run = p
        .store
        .update_run(id, &|r| change::respond(r, answer, &approval, &docs, now))
        .await?;
    if run.status == RunStatus::Stopped {
        // No budget left for the answer: the run ended; its outcome goes out now.
        p.follow_up.send(&run).await?;
    } else {
        p.follow_up.enqueue_next(&run, StepReason::Respond).await?;
    }
    Ok(run)
}

pub async fn continue_run_with(
    p: &Platform, id: &str, budgets: &BudgetsInput,
) -> Result<Run, ServiceError> {
    let now = p.clock.now_ms();
    let limit = p.config.active_limit;
    let run = p
        .store
        .update_run(id, &|r| change::continue_run(r, budgets, limit, now))
        .await?;
    p.follow_up.enqueue_next(&run, StepReason::Resume).await?;
    Ok(run)
}

/// A message to a run that has not ended: its next iteration's planner reads it. Nothing is
/// enqueued: a queued or running run gets to its next iteration anyway, and a waiting or paused
/// one shows it once it goes on.
pub async fn post_message(p: &Platform, id: &str, text: &str) -> Result<Run, ServiceError> {
    if is_blank(text) || text.chars().count() > change::MAX_MESSAGE_CHARS {
        return Err(ServiceError::Invalid(format!(
            "text must be 1 to {} characters",
            change::MAX_MESSAGE_CHARS
        )));
    }
    let (text, now) = (text.trim(), p.clock.now_ms());
    Ok(p.store
        .update_run(id, &|r| change::post_message(r, text, now))
        .await?)
}

/// Pause: a queued run at once, a running one after the iteration in flight commits.
pub async fn pause_run(p: &Platform, id: &str) -> Result<Run, ServiceError> {
    let now = p.clock.now_ms();
    Ok(p.store
        .update_run(id, &|r| change::request_pause(r, now))
        .await?)
}

/// Edit the objective or the plan; takes effect at the next iteration.
pub async fn patch_run_with(p: &Platform, id: &str, edit: RunPatch) -> Result<Run, ServiceError> {
    let now = p.clock.now_ms();
    Ok(p.store
        .update_run(id, &|r| change::patch(r, edit.clone(), now))
        .await?)
}
