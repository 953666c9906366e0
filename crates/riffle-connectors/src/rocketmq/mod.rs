//! The `rocketmq` connector, on Riffle's embedded topic store (`riffle_store`) or a real
//! RocketMQ cluster.
//!
//! With no name server option the connector reads and writes topics of the embedded store in
//! `riffle.store.dir` (default `./.riffle`). A name server (`rocketmq.client.endpoints`,
//! `nameServerAddress`, `namesrvAddr`) selects a real cluster ([`cluster`]). Source and sink
//! are written once against [`Topics`], which both implement.
//!
//! Options of every generation are normalised by [`options::normalize`] from the connector's
//! data in `dialects/connectors/rocketmq.toml`, which also lists the metadata keys.

pub mod cluster;
pub mod metadata;
pub mod options;
pub mod sink;
pub mod source;
pub mod transaction;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use riffle_store::{Store, StoreOptions, Topics};

use self::options::RocketMqOptions;

use crate::{ConnectorError, Result};

/// Stores open in this process, by canonical data directory. The store locks its directory
/// against other processes, so every table of a job on one directory shares one handle.
static OPEN_STORES: Mutex<Option<HashMap<PathBuf, Weak<Store>>>> = Mutex::new(None);

/// The embedded store in `dir` (created if missing), shared with other tables of this process.
pub fn shared_store(dir: &Path) -> Result<Arc<Store>> {
    std::fs::create_dir_all(dir).map_err(|e| {
        ConnectorError::new(format!(
            "cannot create the store directory {}: {e}",
            dir.display()
        ))
    })?;
    let key = dir.canonicalize().map_err(|e| {
        ConnectorError::new(format!(
            "cannot resolve the store directory {}: {e}",
            dir.display()
        ))
    })?;
    let mut guard = OPEN_STORES
        .lock()
        .map_err(|_| ConnectorError::new("the embedded store registry is poisoned"))?;
    let stores = guard.get_or_insert_with(HashMap::new);
    if let Some(store) = stores.get(&key).and_then(Weak::upgrade) {
        return Ok(store);
    }
    let store = Arc::new(Store::open(&key, StoreOptions::default()).map_err(|e| {
        ConnectorError::new(format!("embedded topic store {}: {e}", dir.display()))
    })?);
    stores.insert(key, Arc::downgrade(&store));
    Ok(store)
}

/// The topics a table's options point at: the cluster behind its name server, else the
/// embedded store in its data directory.
pub fn open_topics(opts: &RocketMqOptions) -> Result<Arc<dyn Topics>> {
    match &opts.cluster {
        Some(address) => Ok(cluster::connect(address).map_err(|e| store_error(&opts.table, e))?),
        None => Ok(shared_store(&opts.store_dir)?),
    }
}

/// A store error with the table it happened for.
fn store_error(table: &str, e: riffle_store::StoreError) -> ConnectorError {
    ConnectorError::new(format!("rocketmq table '{table}': {e}"))
}
