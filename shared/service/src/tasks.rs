//! The tasks a terminal started with `longrun task` on the machine `serve` runs on, read-only,
//! and the live bus of any agent folder (an agent run's or such a task's). The terminal's tasks
//! are the machine user's: only the deployment's `tasks_user` sees them; to anyone else there
//! are none, and a named one is a 404 like another user's run.

use longrun_domain::{TaskSummary, TaskView};
use longrun_ports::{AgentError, AgentHost, BusPage, Folder};

use crate::error::ServiceError;
use crate::platform::Platform;
use crate::runs::agent_error;

/// Whose bus: an agent run (by id) or a terminal task (by project and task).
#[derive(Clone, Debug)]
pub enum BusOf {
    Run(String),
    Task { project: String, task: String },
}

fn host_for<'a>(p: &'a Platform, user: &str) -> Option<&'a dyn AgentHost> {
    let sees = p.config.tasks_user.as_deref() == Some(user);
    p.engine.agents.as_deref().filter(|_| sees)
}

/// The caller's terminal tasks, the most recently active first; none for anyone but the
/// deployment's `tasks_user`, and none where no agents run.
pub async fn list_tasks(p: &Platform, user: &str) -> Result<Vec<TaskSummary>, ServiceError> {
    match host_for(p, user) {
        Some(host) => host.tasks().await.map_err(agent_error),
        None => Ok(vec![]),
    }
}

/// One terminal task: its processes, bus, TASK.md, TASK_STATE.md, output and live tail.
pub async fn task_view(
    p: &Platform, user: &str, project: &str, task: &str,
) -> Result<TaskView, ServiceError> {
    let missing = || ServiceError::NotFound(format!("task {project}/{task}"));
    let host = host_for(p, user).ok_or_else(missing)?;
    host.task(project, task)
        .await
        .map_err(agent_error)?
        .ok_or_else(missing)
}

/// A page of a bus after `after`, and whether more may come; the caller must own the run, or
/// be the tasks' user.
pub async fn bus_after(
    p: &Platform, user: &str, of: &BusOf, after: i64,
) -> Result<BusPage, ServiceError> {
    match of {
        BusOf::Run(id) => {
            let run = match p.store.get_committed_run(id).await? {
                Some(run) if run.user_id == user && run.agent.is_some() => run,
                _ => return Err(ServiceError::NotFound(format!("agent run {id}"))),
            };
            let host = p.engine.agents.as_deref().ok_or_else(|| {
                ServiceError::NotFound("agent bus: this deployment runs no agents".into())
            })?;
            let mut page = host
                .bus(Folder::Run(&run), after)
                .await
                .map_err(agent_error)?;
            // Between two iterations no process runs, yet the run goes on.
            page.live |= !(run.status.is_ended() || run.status.is_waiting());
            Ok(page)
        }
        BusOf::Task { project, task } => {
            let missing = || ServiceError::NotFound(format!("task {project}/{task}"));
            let host = host_for(p, user).ok_or_else(missing)?;
            host.bus(Folder::Task { project, task }, after)
                .await
                .map_err(|e| match e {
                    AgentError::Invalid(_) => missing(),
                    e => agent_error(e),
                })
        }
    }
}
