//! The run log and workspace on `DynamoDbRunStore`.

use super::*;

/// Runs read a page at a time while filtering a listing by context.
const CONTEXT_SCAN_PAGE: usize = 100;

impl DynamoDbRunStore {
    /// One page of the user's runs, newest first, by the index (status filtered there).
    async fn list_page(&self, user_id: &str, q: &RunQuery) -> StoreResult<Vec<Run>> {
        let pk = user_pk(user_id);
        let before = q
            .before
            .as_ref()
            .map(|(at, id)| format!("{}#{id}", stamp(*at)));
        let status = q.status.map(|st| st.as_str().to_string());
        let items = self
            .query_pages(
                |b| {
                    let mut b = b
                        .index_name(GSI_USER_RUNS)
                        .expression_attribute_values(":pk", s(pk.clone()))
                        .scan_index_forward(false)
                        .limit(q.limit.clamp(1, 1000) as i32);
                    b = match &before {
                        Some(c) => b
                            .key_condition_expression("GSI1PK = :pk AND GSI1SK < :before")
                            .expression_attribute_values(":before", s(c.clone())),
                        None => b.key_condition_expression("GSI1PK = :pk"),
                    };
                    if let Some(st) = &status {
                        b = b
                            .filter_expression("#st = :st")
                            .expression_attribute_names("#st", "status")
                            .expression_attribute_values(":st", s(st.clone()));
                    }
                    b
                },
                q.limit,
            )
            .await?;
        let ids = items.iter().map(run_id_of).collect::<Result<Vec<_>, _>>()?;
        self.runs_by_id(&ids).await
    }
}

#[async_trait]
impl RunLog for DynamoDbRunStore {
    async fn create_run(&self, change: RunChange) -> StoreResult<Run> {
        match self.write(change, None, true).await {
            Ok(stored) => {
                self.remember(&stored);
                Ok(stored.run)
            }
            Err(WriteFailure::Store(e)) => Err(e),
            Err(WriteFailure::Raced) | Err(WriteFailure::CounterEmpty) => {
                Err(StoreError::Conflict("run creation raced".into()))
            }
        }
    }

    async fn get_run(&self, run_id: &str) -> StoreResult<Option<Run>> {
        Ok(self.load(run_id).await?.map(|stored| stored.run))
    }

    async fn list_runs(&self, user_id: &str, q: &RunQuery) -> StoreResult<Vec<Run>> {
        let Some(context) = &q.context else {
            return self.list_page(user_id, q).await;
        };
        // The index projects no context: the user's runs are walked newest first, a page at a
        // time, and filtered once read, until the page is full or the runs run out.
        let mut out = vec![];
        let mut page = RunQuery {
            context: None,
            limit: CONTEXT_SCAN_PAGE,
            ..q.clone()
        };
        loop {
            let runs = self.list_page(user_id, &page).await?;
            let done = runs.len() < CONTEXT_SCAN_PAGE;
            page.before = runs.last().map(|r| (r.created_at, r.id.clone()));
            out.extend(
                runs.into_iter()
                    .filter(|r| context.matches(r.context.as_ref())),
            );
            if out.len() >= q.limit || done {
                out.truncate(q.limit);
                return Ok(out);
            }
        }
    }

    /// Every write is durable when DynamoDB answers, so both durabilities are the same.
    async fn update_run(
        &self, run_id: &str, _: Durability, change: ChangeFn<'_>,
    ) -> StoreResult<Run> {
        self.apply(run_id, change).await
    }

    async fn events(&self, run_id: &str, after: u64, limit: usize) -> StoreResult<Vec<Event>> {
        if limit == 0 {
            return Ok(vec![]);
        }
        // The run item first: an event in its tail then is either still there or, moved
        // since, in a log item the scans below find.
        let Some(stored) = self.load(run_id).await? else {
            return Ok(vec![]);
        };
        // A reader at the head (a live view polling) is answered by the run item alone.
        if stored.run.event_seq <= after || stored.tail.first().is_some_and(|e| e.seq <= after + 1)
        {
            return Ok(stored
                .tail
                .into_iter()
                .filter(|e| e.seq > after)
                .take(limit)
                .collect());
        }
        // The log item holding `after + 1`: readers mostly follow the head, so it is looked
        // for from the newest item down, fetching keys only.
        let mut from = "ITER#".to_string();
        if after > 0 {
            let mut holder = None;
            self.scan_log(
                run_id,
                ("ITER#".into(), LOG_END.into()),
                true,
                2,
                true,
                |item| {
                    if !item.contains_key("first") {
                        return Ok(true);
                    }
                    if num(item, "first")? <= after + 1 {
                        holder = Some(attr(item, "SK")?.to_string());
                        return Ok(false);
                    }
                    Ok(true)
                },
            )
            .await?;
            if let Some(sk) = holder {
                from = sk;
            }
        }
        let mut out: Vec<Event> = vec![];
        self.scan_log(
            run_id,
            (from, LOG_END.into()),
            false,
            limit,
            false,
            |item| {
                if !item.contains_key("first") {
                    return Ok(true);
                }
                let log: LogItem = unpack(item, "log")?;
                for e in log.evts {
                    if e.seq > out.last().map_or(after, |l| l.seq) {
                        out.push(e);
                        if out.len() >= limit {
                            return Ok(false);
                        }
                    }
                }
                Ok(true)
            },
        )
        .await?;
        for e in stored.tail {
            if out.len() >= limit {
                break;
            }
            if e.seq > out.last().map_or(after, |l| l.seq) {
                out.push(e);
            }
        }
        Ok(out)
    }

    async fn iterations(
        &self, run_id: &str, after: u32, limit: usize,
    ) -> StoreResult<Vec<IterationRecord>> {
        self.log_entries(run_id, iter_sk(after + 1), false, limit, |log| log.rec)
            .await
    }

    async fn active_runs(&self, user_id: &str) -> StoreResult<u32> {
        let item = self
            .get_consistent(user_pk(user_id), "ACTIVE".into())
            .await?;
        Ok(item.map(|i| num(&i, "count")).transpose()?.unwrap_or(0) as u32)
    }

    async fn stale_runs(&self, updated_before: i64, limit: usize) -> StoreResult<Vec<Run>> {
        // Every bucket up to the one holding `updated_before`; the runs themselves say which
        // were really not written since.
        let upto = stamp(sweep_bucket(updated_before) + SWEEP_BUCKET_MS);
        let items = self
            .sweep_index_upto(
                SWEEP_PARTITION,
                "<",
                upto,
                STALE_CANDIDATES,
                STALE_CANDIDATES.max(limit),
            )
            .await?;
        let ids = items.iter().map(run_id_of).collect::<Result<Vec<_>, _>>()?;
        let runs = self.runs_by_id(&ids).await?;
        Ok(longrun_domain::outcome::stale_owing(
            runs,
            updated_before,
            limit,
        ))
    }

    async fn waits_due(&self, now: i64, limit: usize) -> StoreResult<Vec<Run>> {
        // `#` sorts before every id, so `{now}#~` bounds every deadline at `now`.
        let upto = format!("{}#~", stamp(now));
        let page = limit.clamp(1, 1000);
        let items = self
            .sweep_index_upto(WAIT_PARTITION, "<=", upto, page, limit)
            .await?;
        let ids = items.iter().map(run_id_of).collect::<Result<Vec<_>, _>>()?;
        let runs = self.runs_by_id(&ids).await?;
        Ok(longrun_domain::outcome::waits_due(runs, now, limit))
    }
}

#[async_trait]
impl Workspace for DynamoDbRunStore {
    async fn docs(&self, run_id: &str, prefix: &str, limit: usize) -> StoreResult<Vec<DocMeta>> {
        if limit == 0 {
            return Ok(vec![]);
        }
        let items = self
            .with_prefix(
                run_pk(run_id),
                format!("DOC#{prefix}"),
                "meta",
                limit,
                false,
            )
            .await?;
        items.iter().map(|i| from_attr(i, "meta")).collect()
    }

    async fn doc(&self, run_id: &str, path: &str) -> StoreResult<Option<Doc>> {
        let item = self
            .get_consistent(run_pk(run_id), format!("DOC#{path}"))
            .await?;
        item.map(|i| from_attr(&i, "doc")).transpose()
    }

    async fn search_docs(
        &self, run_id: &str, query: &str, limit: usize,
    ) -> StoreResult<Vec<DocHit>> {
        let items = self
            .with_prefix(run_pk(run_id), "DOC#".into(), "doc", usize::MAX, false)
            .await?;
        let mut hits = vec![];
        for i in &items {
            let d: Doc = from_attr(i, "doc")?;
            if let Some(h) = doc_hit(&d.path, &d.title, &d.content, query) {
                hits.push(h);
                if hits.len() >= limit {
                    break;
                }
            }
        }
        Ok(hits)
    }

    async fn scratchpad(&self, run_id: &str, last: usize) -> StoreResult<Vec<PadEntry>> {
        let mut out = self
            .log_entries(run_id, "ITER#".into(), true, last, |log| log.scratch)
            .await?;
        out.reverse();
        Ok(out)
    }
}
