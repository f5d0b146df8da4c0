//! The run use cases: create, cancel, respond, continue, pause, patch. Transport-free: the
//! HTTP API, the MCP server, the sweeper and the simulator call these.

use longrun_domain::AgentView;
use longrun_domain::change;
use longrun_domain::criteria::{Criterion, Grading};
use longrun_domain::run::{
    Budgets, BudgetsInput, MAX_PLAN_STEPS, Run, RunPatch, RunScope, RunStatus,
};
use longrun_domain::{McpServer, is_blank, no_controls};
use longrun_ports::Durability;
use longrun_ports::{AgentError, CatalogExt, StepReason};

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

/// A plan step's id is at most this many characters, its title at most `MAX_STEP_TITLE_CHARS`.
pub const MAX_STEP_ID_CHARS: usize = 64;
pub const MAX_STEP_TITLE_CHARS: usize = 500;

/// An edit's sizes: no more plan steps than a plan holds, each with a visible id and a title of
/// bounded length (a plan is shown to the model on every iteration).
fn check_patch(edit: &RunPatch) -> Result<(), ServiceError> {
    if let Some(o) = &edit.objective {
        no_controls("objective", o).map_err(ServiceError::Invalid)?;
    }
    if edit.plan.len() > MAX_PLAN_STEPS {
        return Err(ServiceError::Invalid(format!(
            "plan: at most {MAX_PLAN_STEPS} steps, got {}",
            edit.plan.len()
        )));
    }
    for (i, step) in edit.plan.iter().enumerate() {
        if is_blank(&step.id) || step.id.chars().count() > MAX_STEP_ID_CHARS {
            return Err(ServiceError::Invalid(format!(
                "plan[{i}].id must be 1 to {MAX_STEP_ID_CHARS} characters, not blank"
            )));
        }
        if step.title.chars().count() > MAX_STEP_TITLE_CHARS {
            return Err(ServiceError::Invalid(format!(
                "plan[{i}].title: at most {MAX_STEP_TITLE_CHARS} characters"
            )));
        }
        no_controls(&format!("plan[{i}].id"), &step.id).map_err(ServiceError::Invalid)?;
        no_controls(&format!("plan[{i}].title"), &step.title).map_err(ServiceError::Invalid)?;
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
    no_controls("objective", objective).map_err(ServiceError::Invalid)?;
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
        if budgets.max_cost_usd.is_some()
            && req.agent.is_none()
            && !p.config.priced_models.contains(model)
        {
            return Err(ServiceError::Invalid(format!(
                "budgets.max_cost_usd cannot be enforced: no price is known for model `{model}`"
            )));
        }
    }
    let model = models[0].clone();
    let now = p.clock.now_ms();
    let mut run = Run::new(&id, user, objective, &model, budgets, thresholds, now);
    run.permission_mode = req.permission_mode.unwrap_or_default();
    run.agent = req.agent.map(|a| agent(p, a)).transpose()?;
    run.completion_criteria = completion_criteria(req.completion_criteria, run.agent.is_some())?;
    run.grading = grading(p, req.grading)?;
    run.context = req
        .context
        .map(|c| c.checked())
        .transpose()
        .map_err(ServiceError::Invalid)?;
    run.scope = RunScope::checked(req.scope, req.project_ids).map_err(ServiceError::Invalid)?;
    if let Some(allowed) = req.allowed_tools {
        if allowed.len() > MAX_ALLOWED_TOOLS || allowed.iter().any(|n| is_blank(n)) {
            return Err(ServiceError::Invalid(format!(
                "allowed_tools must list at most {MAX_ALLOWED_TOOLS} tool names, none empty"
            )));
        }
        for (i, name) in allowed.iter().enumerate() {
            no_controls(&format!("allowed_tools[{i}]"), name).map_err(ServiceError::Invalid)?;
        }
        run.allowed_tools = Some(allowed);
    }
    if models.len() > 1 {
        run.models = models;
    }
    Ok(run)
}

/// The agent an agent run names, if this deployment can start it.
fn agent(p: &Platform, name: String) -> Result<String, ServiceError> {
    let Some(host) = &p.engine.agents else {
        return Err(ServiceError::Invalid(format!(
            "agent runs need a host that can start processes, and this deployment cannot (it runs on AWS Lambda): run agent `{name}` with `longrun serve` or `longrun task` instead"
        )));
    };
    let agents = host.agents();
    if !agents.contains(&name) {
        return Err(ServiceError::Invalid(format!(
            "agent `{name}` is not configured on this server; choose one of: {}",
            agents.join(", ")
        )));
    }
    Ok(name)
}

/// At most this many completion criteria, each at most `MAX_CRITERION_CHARS` characters.
pub const MAX_CRITERIA: usize = 20;
pub const MAX_CRITERION_CHARS: usize = 500;

/// The request's criteria, trimmed, or why they cannot be accepted (`agent`: the run's
/// iterations are agent processes, where a command check runs).
fn completion_criteria(
    criteria: Vec<Criterion>, agent: bool,
) -> Result<Vec<Criterion>, ServiceError> {
    if criteria.len() > MAX_CRITERIA {
        return Err(ServiceError::Invalid(format!(
            "completion_criteria lists {} criteria; at most {MAX_CRITERIA} are allowed",
            criteria.len()
        )));
    }
    for (i, c) in criteria.iter().enumerate() {
        for (field, text) in c.texts() {
            let name = match field {
                "" => format!("completion_criteria[{i}]"),
                f => format!("completion_criteria[{i}].{f}"),
            };
            let chars = text.chars().count();
            if is_blank(text) || chars > MAX_CRITERION_CHARS {
                return Err(ServiceError::Invalid(format!(
                    "{name} must be 1 to {MAX_CRITERION_CHARS} characters and not blank, got {chars}"
                )));
            }
            no_controls(&name, text).map_err(ServiceError::Invalid)?;
        }
        if let Some(problem) = c.problem(agent) {
            return Err(ServiceError::Invalid(format!(
                "completion_criteria[{i}]: {problem}"
            )));
        }
    }
    Ok(criteria
        .into_iter()
        .map(|c| match c {
            Criterion::Text(t) => Criterion::Text(t.trim().to_string()),
            check => check,
        })
        .collect())
}

/// How the run's criteria are graded: the grader's model must be one the server has.
fn grading(p: &Platform, grading: Option<Grading>) -> Result<Grading, ServiceError> {
    let grading = grading.unwrap_or_default();
    if let Some(model) = &grading.model
        && !p.config.models.contains(model)
    {
        return Err(ServiceError::Invalid(format!(
            "grading.model `{model}` is not available; choose one of: {}",
            p.config.models.join(", ")
        )));
    }
    Ok(grading)
}

/// The caller's run: one of another user is as missing as one that never was.
pub async fn run_of(p: &Platform, user: &str, id: &str) -> Result<Run, ServiceError> {
    match p.store.get_committed_run(id).await? {
        Some(run) if run.user_id == user => Ok(run),
        _ => Err(ServiceError::NotFound(format!("run {id}"))),
    }
}

// The run actions, each on the caller's own run only: the API, MCP and the simulator drive
// these same functions.

pub async fn cancel_run(p: &Platform, user: &str, id: &str) -> Result<Run, ServiceError> {
    run_of(p, user, id).await?;
    let docs = p.store.docs(id, "", 10_000).await?;
    let now = p.clock.now_ms();
    let run = p
        .store
        .update_run(id, Durability::Now, &|r| {
            change::request_cancel(r, &docs, now)
        })
        .await?;
    if run.status == RunStatus::Canceled {
        // Ends its children too, and tells its parent.
        p.follow_up.send(&run).await?;
    }
    if let (Some(_), Some(host)) = (&run.agent, &p.engine.agents) {
        // The iteration in flight ends when its process does; its commit records the cancel.
        if let Err(e) = host.stop(&run).await {
            tracing::warn!(run_id = %run.id, error = %e, "stopping the agent's processes failed");
        }
    }
    Ok(run)
}

pub async fn respond_run(
    p: &Platform, user: &str, id: &str, answer: &str, approval: change::Approval,
) -> Result<Run, ServiceError> {
    run_of(p, user, id).await?;
    if (is_blank(answer) && approval.is_empty())
        || answer.chars().count() > change::MAX_ANSWER_CHARS
    {
        return Err(ServiceError::Invalid(format!(
            "answer must be 1 to {} characters, or approve / decisions must be given",
            change::MAX_ANSWER_CHARS
        )));
    }
    no_controls("answer", answer).map_err(ServiceError::Invalid)?;
    let answer = answer.trim();
    let docs = p.store.docs(id, "", 10_000).await?;
    let now = p.clock.now_ms();
    let run = p
        .store
        .update_run(id, Durability::Now, &|r| {
            change::respond(r, answer, &approval, &docs, now)
        })
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
    p: &Platform, user: &str, id: &str, budgets: &BudgetsInput,
) -> Result<Run, ServiceError> {
    run_of(p, user, id).await?;
    let now = p.clock.now_ms();
    let limit = p.config.active_limit;
    let run = p
        .store
        .update_run(id, Durability::Now, &|r| {
            change::continue_run(r, budgets, limit, now)
        })
        .await?;
    p.follow_up.enqueue_next(&run, StepReason::Resume).await?;
    Ok(run)
}

/// A follow-up question to an ended run (completed, stopped or failed): the run is queued
/// again and every planner prompt from its next iteration on carries the question. Budgets are
/// the run's own (spend never resets), raised by `budgets` when given; a run with nothing left
/// is refused with what to raise. Its report is superseded by the one its next end writes.
pub async fn follow_up_run(
    p: &Platform, user: &str, id: &str, question: &str, budgets: &BudgetsInput,
) -> Result<Run, ServiceError> {
    run_of(p, user, id).await?;
    if is_blank(question) || question.chars().count() > change::MAX_FOLLOW_UP_CHARS {
        return Err(ServiceError::Invalid(format!(
            "question must be 1 to {} characters",
            change::MAX_FOLLOW_UP_CHARS
        )));
    }
    no_controls("question", question).map_err(ServiceError::Invalid)?;
    let now = p.clock.now_ms();
    let limit = p.config.active_limit;
    let run = p
        .store
        .update_run(id, Durability::Now, &|r| {
            change::follow_up(r, question, budgets, limit, now)
        })
        .await?;
    p.follow_up.enqueue_next(&run, StepReason::Resume).await?;
    Ok(run)
}

/// A message to a run that has not ended: its next iteration's planner reads it. Nothing is
/// enqueued: a queued or running run gets to its next iteration anyway, and a waiting or paused
/// one shows it once it goes on.
pub async fn post_message(
    p: &Platform, user: &str, id: &str, text: &str,
) -> Result<Run, ServiceError> {
    run_of(p, user, id).await?;
    if is_blank(text) || text.chars().count() > change::MAX_MESSAGE_CHARS {
        return Err(ServiceError::Invalid(format!(
            "text must be 1 to {} characters",
            change::MAX_MESSAGE_CHARS
        )));
    }
    no_controls("text", text).map_err(ServiceError::Invalid)?;
    let (text, now) = (text.trim(), p.clock.now_ms());
    let run = p
        .store
        .update_run(id, Durability::Now, &|r| change::post_message(r, text, now))
        .await?;
    if let (Some(_), Some(host)) = (&run.agent, &p.engine.agents) {
        // The agent at work reads the bus now; the run's log keeps the message as for any run.
        host.post(&run, text).await.map_err(agent_error)?;
    }
    Ok(run)
}

/// An agent run's task folder: its processes, bus, state, output and live tail.
pub async fn agent_view(p: &Platform, run: &Run) -> Result<AgentView, ServiceError> {
    if run.agent.is_none() {
        return Err(ServiceError::NotFound(format!(
            "agent view: run {} is not an agent run",
            run.id
        )));
    }
    let Some(host) = &p.engine.agents else {
        return Err(ServiceError::NotFound(
            "agent view: this deployment runs no agents".into(),
        ));
    };
    host.view(run).await.map_err(agent_error)
}

pub(crate) fn agent_error(e: AgentError) -> ServiceError {
    match e {
        AgentError::Invalid(m) => ServiceError::Invalid(m),
        AgentError::Io(m) => ServiceError::Unavailable(format!("agent host: {m}")),
    }
}

/// Pause: a queued run at once, a running one after the iteration in flight commits.
pub async fn pause_run(p: &Platform, user: &str, id: &str) -> Result<Run, ServiceError> {
    run_of(p, user, id).await?;
    let now = p.clock.now_ms();
    Ok(p.store
        .update_run(id, Durability::Now, &|r| change::request_pause(r, now))
        .await?)
}

/// Edit the objective or the plan; takes effect at the next iteration.
pub async fn patch_run_with(
    p: &Platform, user: &str, id: &str, edit: RunPatch,
) -> Result<Run, ServiceError> {
    run_of(p, user, id).await?;
    check_patch(&edit)?;
    let now = p.clock.now_ms();
    Ok(p.store
        .update_run(id, Durability::Now, &|r| {
            change::patch(r, edit.clone(), now)
        })
        .await?)
}
