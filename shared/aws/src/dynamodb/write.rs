//! The optimistic, fenced writes of `DynamoDbRunStore`.

use super::retention::may_expire;
use super::*;

impl DynamoDbRunStore {
    /// The store on `table`; catalog secrets are sealed under `sealer`'s key.
    pub fn new(client: Client, table: impl Into<String>, sealer: longrun_ports::Sealer) -> Self {
        DynamoDbRunStore {
            client,
            table: table.into(),
            cache: Mutex::default(),
            retention_s: None,
            sealer,
        }
    }

    pub(super) fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<String, Stored>> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn remember(&self, stored: &Stored) {
        let mut c = self.cache();
        if c.len() >= CACHE_MAX && !c.contains_key(&stored.run.id) {
            c.clear();
        }
        c.insert(stored.run.id.clone(), stored.clone());
    }

    pub(super) fn forget(&self, run_id: &str) {
        self.cache().remove(run_id);
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    pub(super) async fn load(&self, run_id: &str) -> StoreResult<Option<Stored>> {
        let Some(item) = self.get_consistent(run_pk(run_id), "RUN".into()).await? else {
            self.forget(run_id);
            return Ok(None);
        };
        let blob: RunBlob = unpack(&item, "run")?;
        let stored = Stored {
            run: blob.run,
            ver: num(&item, "ver")?,
            tail: blob.tail,
        };
        self.remember(&stored);
        Ok(Some(stored))
    }

    pub(super) fn run_item(
        &self, run: &Run, ver: u64, tail: &[Event],
    ) -> StoreResult<HashMap<String, Av>> {
        let mut item = HashMap::from([
            ("PK".to_string(), s(run_pk(&run.id))),
            ("SK".to_string(), s("RUN")),
            ("ver".to_string(), n(ver)),
            ("run".to_string(), pack(&RunBlobRef { run, tail })?),
            ("status".to_string(), s(run.status.as_str())),
            ("GSI1PK".to_string(), s(user_pk(&run.user_id))),
            (
                "GSI1SK".to_string(),
                s(format!("{}#{}", stamp(run.created_at), run.id)),
            ),
        ]);
        if let Some(at) = self.expiry(run) {
            item.insert("expires_at".into(), n(at));
        }
        // Sparse: only runs the sweeper may have to nudge (a next step or an outcome owed).
        if longrun_domain::outcome::owes_follow_up(run) {
            item.insert("GSI2PK".into(), s(SWEEP_PARTITION));
            item.insert("GSI2SK".into(), s(stamp(sweep_bucket(run.updated_at))));
        } else if let (longrun_domain::RunStatus::WaitingOnChildren, Some(at)) =
            (*run.status, run.children_wait_until)
        {
            // Never owing a follow-up (a wait on children is not announced): its deadline is.
            item.insert("GSI2PK".into(), s(WAIT_PARTITION));
            item.insert("GSI2SK".into(), s(format!("{}#{}", stamp(at), run.id)));
        }
        Ok(item)
    }

    /// The whole change in one write: a conditional put of the run item alone when nothing
    /// else changes (its events ride in its tail), else one transaction. `base` is `None` for
    /// a create.
    pub(super) async fn write(
        &self, mut change: RunChange, base: Option<&Stored>, release_counter: bool,
    ) -> Result<Stored, WriteFailure> {
        let at = change.run.updated_at;
        let base_seq = base.map_or(0, |b| b.run.event_seq);
        let expected_ver = base.map(|b| b.ver);
        let mut events = base.map(|b| b.tail.clone()).unwrap_or_default();
        events.extend(sequence_events(&mut change, base_seq, at));
        let next_ver = expected_ver.map_or(1, |v| v + 1);
        let counter = self.counter_update(&change, release_counter);
        let alone = counter.is_none()
            && change.iteration.is_none()
            && change.pad.is_none()
            && change.docs.is_empty()
            && events.len() <= TAIL_MAX;
        if let (true, Some(ver)) = (alone, expected_ver) {
            return self.put_alone(change.run, ver, next_ver, events).await;
        }

        let mut run_put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(self.run_item(&change.run, next_ver, &[])?));
        run_put = match expected_ver {
            None => run_put.condition_expression("attribute_not_exists(PK)"),
            Some(v) => run_put
                .condition_expression("ver = :ver")
                .expression_attribute_values(":ver", n(v)),
        };
        let mut items: Vec<(Slot, TransactWriteItem)> = vec![(Slot::Run, put_item(run_put)?)];
        if let Some(upd) = counter {
            items.push((
                Slot::Counter,
                TransactWriteItem::builder()
                    .update(upd.build().map_err(unavailable)?)
                    .build(),
            ));
        }
        items.extend(self.log_item(&change, &events)?);
        items.extend(self.doc_items(&change)?);
        if items.len() > MAX_TRANSACTION_ITEMS {
            return Err(StoreError::Corrupt(format!(
                "a change of {} items exceeds DynamoDB's {MAX_TRANSACTION_ITEMS}-item transaction",
                items.len()
            ))
            .into());
        }

        let slots: Vec<Slot> = items.iter().map(|(k, _)| *k).collect();
        let result = self
            .client
            .transact_write_items()
            .set_transact_items(Some(items.into_iter().map(|(_, i)| i).collect()))
            .send()
            .await;
        match result {
            Ok(_) => Ok(Stored {
                run: change.run,
                ver: next_ver,
                tail: vec![],
            }),
            Err(e) => Err(classify(&e, &slots, &change, expected_ver.is_none())),
        }
    }

    /// The per-user active-run counter's part of a change, if any.
    pub(super) fn counter_update(
        &self, change: &RunChange, release_counter: bool,
    ) -> Option<aws_sdk_dynamodb::types::builders::UpdateBuilder> {
        let key = |b: aws_sdk_dynamodb::types::builders::UpdateBuilder| {
            b.table_name(&self.table)
                .key("PK", s(user_pk(&change.run.user_id)))
                .key("SK", s("ACTIVE"))
                .expression_attribute_names("#c", "count")
                .expression_attribute_values(":zero", n(0))
                .expression_attribute_values(":one", n(1))
        };
        match change.active {
            ActiveDelta::Acquire { limit } => Some(
                key(Update::builder())
                    .update_expression("SET #c = if_not_exists(#c, :zero) + :one")
                    .condition_expression("attribute_not_exists(#c) OR #c < :limit")
                    .expression_attribute_values(":limit", n(limit)),
            ),
            ActiveDelta::Release if release_counter => Some(
                key(Update::builder())
                    .update_expression("SET #c = #c - :one")
                    .condition_expression("#c > :zero"),
            ),
            ActiveDelta::Release | ActiveDelta::None => None,
        }
    }

    /// A write of the run alone: one conditional put, its events riding in its tail.
    pub(super) async fn put_alone(
        &self, run: Run, ver: u64, next_ver: u64, events: Vec<Event>,
    ) -> Result<Stored, WriteFailure> {
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(self.run_item(&run, next_ver, &events)?))
            .condition_expression("ver = :ver")
            .expression_attribute_values(":ver", n(ver))
            .send()
            .await;
        match result {
            Ok(_) => Ok(Stored {
                run,
                ver: next_ver,
                tail: events,
            }),
            Err(e) if error_code(&e) == Some("ConditionalCheckFailedException") => {
                Err(WriteFailure::Raced)
            }
            Err(e) => Err(WriteFailure::Store(unavailable(describe(&e)))),
        }
    }

    /// The write's events (after the run item's tail) go into one log item: the iteration's
    /// own when it commits one, with its record and scratchpad entry, else a batch item that
    /// sorts after its run's last iteration. Either way the log items' key order is seq
    /// order. A put that finds its key taken lost a race.
    pub(super) fn log_item(
        &self, change: &RunChange, events: &[Event],
    ) -> StoreResult<Option<(Slot, TransactWriteItem)>> {
        let run = &change.run;
        let committed = change
            .iteration
            .as_ref()
            .map(|r| r.n)
            .or(change.pad.as_ref().map(|p| p.n));
        let sk = match (committed, events.first()) {
            (Some(k), _) => iter_sk(k),
            (None, Some(first)) => format!("{}#{:010}", iter_sk(run.iteration), first.seq),
            (None, None) => return Ok(None),
        };
        let mut item = HashMap::from([
            ("PK".to_string(), s(run_pk(&run.id))),
            ("SK".to_string(), s(sk)),
            (
                "log".to_string(),
                pack(&LogItemRef {
                    rec: change.iteration.as_ref(),
                    scratch: change.pad.as_ref(),
                    evts: events,
                })?,
            ),
        ]);
        if let (Some(first), Some(last)) = (events.first(), events.last()) {
            item.insert("first".into(), n(first.seq));
            item.insert("last".into(), n(last.seq));
        }
        let p = Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(PK)");
        let slot = if committed.is_some() {
            Slot::Iteration
        } else {
            Slot::Event
        };
        Ok(Some((slot, put_item(p)?)))
    }

    /// One put per doc path; a transaction takes one operation per item, so the last write
    /// of a path wins.
    pub(super) fn doc_items(
        &self, change: &RunChange,
    ) -> StoreResult<Vec<(Slot, TransactWriteItem)>> {
        let pk = run_pk(&change.run.id);
        let mut docs: Vec<&Doc> = vec![];
        for d in change.docs.iter().rev() {
            if !docs.iter().any(|x| x.path == d.path) {
                docs.push(d);
            }
        }
        docs.into_iter()
            .map(|d| {
                let item = HashMap::from([
                    ("PK".to_string(), s(pk.clone())),
                    ("SK".to_string(), s(format!("DOC#{}", d.path))),
                    ("meta".to_string(), s(to_json(&d.meta())?)),
                    ("doc".to_string(), s(to_json(d)?)),
                ]);
                let p = Put::builder().table_name(&self.table).set_item(Some(item));
                Ok((Slot::Other, put_item(p)?))
            })
            .collect()
    }

    pub(super) async fn apply(&self, run_id: &str, change: ChangeFn<'_>) -> StoreResult<Run> {
        let mut release_counter = true;
        let mut cached = self.cache().get(run_id).cloned();
        for attempt in 0..MAX_ATTEMPTS {
            let fresh = cached.is_none();
            let stored = match cached.take() {
                Some(c) => c,
                None => self.load(run_id).await?.ok_or(Rejection::NotFound)?,
            };
            let c = match change(&stored.run) {
                Ok(c) => c,
                // Only the current state may say no.
                Err(_) if !fresh => continue,
                Err(rejection) => return Err(rejection.into()),
            };
            let (was, will) = (self.expiry(&stored.run), self.expiry(&c.run));
            // Before the write that brings the run back (a continue), its items must stop
            // expiring, whatever this instance's policy: another function may have stamped them.
            if may_expire(&stored.run) && !may_expire(&c.run) {
                self.stamp_expiry(run_id, None).await?;
            }
            match self.write(c, Some(&stored), release_counter).await {
                Ok(next) => {
                    self.remember(&next);
                    if will.is_some() && will != was {
                        self.stamp_expiry(run_id, will).await?;
                    }
                    return Ok(next.run);
                }
                Err(WriteFailure::Store(e)) => {
                    self.forget(run_id);
                    return Err(e);
                }
                Err(WriteFailure::CounterEmpty) => {
                    release_counter = false;
                    cached = Some(stored);
                }
                Err(WriteFailure::Raced) => {
                    self.forget(run_id);
                    if fresh {
                        let ms = fastrand::u64(2..=20) << attempt.min(4);
                        tokio::time::sleep(Duration::from_millis(ms)).await;
                    }
                }
            }
        }
        Err(StoreError::Conflict(format!(
            "run {run_id} kept changing under {MAX_ATTEMPTS} attempts"
        )))
    }

    /// The runs of `ids` that exist, in that order, read consistently in batches of 100.
    pub(super) async fn runs_by_id(&self, ids: &[String]) -> StoreResult<Vec<Run>> {
        let mut found: HashMap<String, Run> = HashMap::with_capacity(ids.len());
        for chunk in ids.chunks(100) {
            let mut keys: Vec<HashMap<String, Av>> = chunk
                .iter()
                .map(|id| HashMap::from([("PK".into(), s(run_pk(id))), ("SK".into(), s("RUN"))]))
                .collect();
            for attempt in 0..MAX_ATTEMPTS {
                if keys.is_empty() {
                    break;
                }
                let ka = KeysAndAttributes::builder()
                    .set_keys(Some(std::mem::take(&mut keys)))
                    .consistent_read(true)
                    .build()
                    .map_err(unavailable)?;
                let out = self
                    .client
                    .batch_get_item()
                    .request_items(&self.table, ka)
                    .send()
                    .await
                    .map_err(|e| unavailable(describe(&e)))?;
                for item in out
                    .responses
                    .and_then(|mut r| r.remove(&self.table))
                    .unwrap_or_default()
                {
                    let run = unpack::<RunBlob>(&item, "run")?.run;
                    found.insert(run.id.clone(), run);
                }
                keys = out
                    .unprocessed_keys
                    .and_then(|mut u| u.remove(&self.table))
                    .map(|ka| ka.keys)
                    .unwrap_or_default();
                if !keys.is_empty() {
                    let ms = fastrand::u64(5..=50) << attempt.min(5);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                }
            }
            if !keys.is_empty() {
                return Err(StoreError::Unavailable(
                    "runs left unread after repeated batch retries".into(),
                ));
            }
        }
        Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
    }

    /// Visits a run's log items between `from` and `to` in key order (or reverse), `page` at
    /// a time (each read item is paid for), until `visit` says stop; `keys_only` fetches just
    /// the key and `first`.
    pub(super) async fn scan_log(
        &self, run_id: &str, (from, to): (String, String), descending: bool, page: usize,
        keys_only: bool, mut visit: impl FnMut(&HashMap<String, Av>) -> StoreResult<bool>,
    ) -> StoreResult<()> {
        let pk = run_pk(run_id);
        let mut start: Option<HashMap<String, Av>> = None;
        loop {
            let mut q = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("PK = :pk AND SK BETWEEN :from AND :to")
                .expression_attribute_values(":pk", s(pk.clone()))
                .expression_attribute_values(":from", s(from.clone()))
                .expression_attribute_values(":to", s(to.clone()))
                .consistent_read(true)
                .scan_index_forward(!descending)
                .limit(page.clamp(1, 100) as i32)
                .set_exclusive_start_key(start.take());
            if keys_only {
                q = q
                    .projection_expression("SK, #f")
                    .expression_attribute_names("#f", "first");
            }
            let page = q.send().await.map_err(|e| unavailable(describe(&e)))?;
            for item in page.items.unwrap_or_default() {
                if !visit(&item)? {
                    return Ok(());
                }
            }
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok(()),
            }
        }
    }

    /// Up to `limit` of what `pick` takes from the log items from `from` on (or, descending,
    /// from the newest down), skipping items without it.
    pub(super) async fn log_entries<T>(
        &self, run_id: &str, from: String, descending: bool, limit: usize,
        pick: impl Fn(LogItem) -> Option<T>,
    ) -> StoreResult<Vec<T>> {
        let mut out = vec![];
        if limit == 0 {
            return Ok(out);
        }
        self.scan_log(
            run_id,
            (from, LOG_END.into()),
            descending,
            limit,
            false,
            |item| {
                if let Some(x) = pick(unpack(item, "log")?) {
                    out.push(x);
                }
                Ok(out.len() < limit)
            },
        )
        .await?;
        Ok(out)
    }

    /// One item by its key, read consistently.
    pub(super) async fn get_consistent(
        &self, pk: String, sk: String,
    ) -> StoreResult<Option<HashMap<String, Av>>> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("PK", s(pk))
            .key("SK", s(sk))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| unavailable(describe(&e)))?;
        Ok(out.item)
    }

    /// Items of one partition of the sweep index whose sort key is below `upto` (`<`) or up to
    /// it (`<=`), oldest first: the sweeper's stale runs and the due schedules.
    pub(super) async fn sweep_index_upto(
        &self, partition: &str, op: &str, upto: String, page: usize, limit: usize,
    ) -> StoreResult<Vec<HashMap<String, Av>>> {
        let condition = format!("GSI2PK = :pk AND GSI2SK {op} :upto");
        self.query_pages(
            |b| {
                b.index_name(GSI_SWEEP)
                    .key_condition_expression(&condition)
                    .expression_attribute_values(":pk", s(partition))
                    .expression_attribute_values(":upto", s(upto.clone()))
                    .limit(page as i32)
            },
            limit,
        )
        .await
    }

    pub(super) async fn query_pages(
        &self,
        build: impl Fn(
            aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder,
        ) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder,
        limit: usize,
    ) -> StoreResult<Vec<HashMap<String, Av>>> {
        let mut out = vec![];
        let mut start: Option<HashMap<String, Av>> = None;
        loop {
            let page = build(self.client.query().table_name(&self.table))
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| unavailable(describe(&e)))?;
            out.extend(page.items.unwrap_or_default());
            if out.len() >= limit {
                out.truncate(limit);
                return Ok(out);
            }
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok(out),
            }
        }
    }

    pub(super) async fn with_prefix(
        &self, pk: String, prefix: String, projection: &str, limit: usize, descending: bool,
    ) -> StoreResult<Vec<HashMap<String, Av>>> {
        self.query_pages(
            |q| {
                q.key_condition_expression("PK = :pk AND begins_with(SK, :prefix)")
                    .expression_attribute_values(":pk", s(pk.clone()))
                    .expression_attribute_values(":prefix", s(prefix.clone()))
                    .projection_expression(projection)
                    .consistent_read(true)
                    .scan_index_forward(!descending)
                    .limit(limit.clamp(1, 1000) as i32)
            },
            limit,
        )
        .await
    }
}
