//! The service's durable state in a compacted topic of the embedded store (as rsqlDB keeps its
//! catalog in a compacted RocketMQ topic): the session catalog under the key `catalog`, and one
//! record per submitted job under `job/<id>`. The latest record of a key wins.

use std::collections::BTreeMap;
use std::sync::Arc;

use riffle_session::catalog::Catalog;
use riffle_store::{CleanupPolicy, Message, Store, TopicConfig};
use serde::{Deserialize, Serialize};

/// The topic holding the service's state.
pub const STATE_TOPIC: &str = "riffle_serve_state";

const CATALOG_KEY: &str = "catalog";
const JOB_PREFIX: &str = "job/";
/// Messages read per call while restoring.
const READ_BATCH: usize = 512;

/// What the service should do with a job after a restart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Desired {
    /// Keep it running: it is resumed from its latest checkpoint.
    Running,
    /// Stopped by a user; resumed only on request.
    Stopped,
    /// Ended by itself (bounded inputs ended, or it failed); never restarted.
    Ended,
}

/// A submitted job as persisted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRecord {
    /// The job id.
    pub id: String,
    /// The statement that submitted it.
    pub statement: String,
    /// The script it is planned from.
    pub script: String,
    /// What a restart does with it.
    pub desired: Desired,
}

/// The state read back at start.
#[derive(Debug, Default)]
pub struct Restored {
    /// The session catalog.
    pub catalog: Catalog,
    /// Every job ever submitted, by id.
    pub jobs: BTreeMap<String, JobRecord>,
}

/// Writes and reads the state topic.
#[derive(Clone)]
pub struct StateLog {
    store: Arc<Store>,
}

impl StateLog {
    /// Opens (creating if needed) the state topic in `store`.
    pub fn open(store: Arc<Store>) -> Result<Self, String> {
        if !store.topics().iter().any(|t| t == STATE_TOPIC) {
            let config = TopicConfig {
                queues: 1,
                cleanup_policy: CleanupPolicy::Compaction,
                ..TopicConfig::default()
            };
            store
                .create_topic(STATE_TOPIC, config)
                .map_err(|e| format!("cannot create the state topic {STATE_TOPIC}: {e}"))?;
        }
        Ok(Self { store })
    }

    /// Reads the latest record of every key.
    pub fn restore(&self) -> Result<Restored, String> {
        let mut latest: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        let mut offset = 0;
        loop {
            let batch = self
                .store
                .read(STATE_TOPIC, 0, offset, READ_BATCH)
                .map_err(|e| format!("cannot read the state topic: {e}"))?;
            let Some(last) = batch.last() else { break };
            offset = last.offset + 1;
            for stored in batch {
                if let Some(key) = stored.message.keys.first() {
                    latest.insert(key.clone(), stored.message.body);
                }
            }
        }
        let mut restored = Restored::default();
        for (key, body) in latest {
            if body.is_empty() {
                continue;
            }
            if key == CATALOG_KEY {
                restored.catalog = serde_json::from_slice(&body)
                    .map_err(|e| format!("the persisted catalog is unreadable: {e}"))?;
            } else if let Some(id) = key.strip_prefix(JOB_PREFIX) {
                let record: JobRecord = serde_json::from_slice(&body)
                    .map_err(|e| format!("the persisted job '{id}' is unreadable: {e}"))?;
                restored.jobs.insert(record.id.clone(), record);
            }
        }
        Ok(restored)
    }

    /// Persists the catalog.
    pub fn save_catalog(&self, catalog: &Catalog) -> Result<(), String> {
        self.put(CATALOG_KEY, serde_json::to_vec(catalog))
    }

    /// Persists a job record.
    pub fn save_job(&self, record: &JobRecord) -> Result<(), String> {
        self.put(
            &format!("{JOB_PREFIX}{}", record.id),
            serde_json::to_vec(record),
        )
    }

    fn put(&self, key: &str, body: serde_json::Result<Vec<u8>>) -> Result<(), String> {
        let body = body.map_err(|e| format!("cannot encode {key}: {e}"))?;
        let message = Message::new(body).with_key(key);
        self.store
            .append_batch(STATE_TOPIC, 0, &[message])
            .and_then(|_| self.store.flush())
            .map_err(|e| format!("cannot persist {key}: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use riffle_store::StoreOptions;

    #[test]
    fn the_latest_record_of_each_key_is_restored() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Arc::new(Store::open(dir.path(), StoreOptions::default()).expect("store"));
        let log = StateLog::open(store.clone()).expect("state topic");
        let mut catalog = Catalog::default();
        catalog.config.insert("a".into(), "1".into());
        log.save_catalog(&catalog).expect("catalog");
        let mut job = JobRecord {
            id: "j".into(),
            statement: "INSERT INTO t SELECT 1".into(),
            script: "…".into(),
            desired: Desired::Running,
        };
        log.save_job(&job).expect("job");
        job.desired = Desired::Stopped;
        log.save_job(&job).expect("job again");
        catalog.config.insert("b".into(), "2".into());
        log.save_catalog(&catalog).expect("catalog again");

        let restored = StateLog::open(store)
            .expect("reopen")
            .restore()
            .expect("restore");
        assert_eq!(restored.catalog, catalog);
        assert_eq!(restored.jobs.get("j"), Some(&job));
    }
}
