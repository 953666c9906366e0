//! Where a scaled-out job's own topics live — shuffle topics, state topics and the
//! coordination log: the embedded store of its input tables, or the real RocketMQ cluster they
//! name. Everything in this crate talks to them through [`Topics`], so the units, the shuffle
//! connector and the state topics are the same code on both.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use riffle_connectors::rocketmq::options::{ClusterAddress, Credentials};
use riffle_store::Topics;

use crate::ClusterError;

/// The topics of a scaled-out job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopicBackend {
    /// The embedded store in this directory (processes on one machine share it).
    Embedded(PathBuf),
    /// A real RocketMQ cluster.
    Cluster(ClusterAddress),
}

/// Connector options (of the shuffle connector) that name the backend.
pub mod options {
    /// The embedded store directory.
    pub const STORE_DIR: &str = "store-dir";
    /// The name server(s) of a RocketMQ cluster.
    pub const NAMESRV: &str = "namesrv";
    /// The cluster's ACL access key.
    pub const ACCESS_KEY: &str = "access-key";
    /// The cluster's ACL secret key.
    pub const SECRET_KEY: &str = "secret-key";
}

impl TopicBackend {
    /// Opens the topics (shared with the other users in this process).
    pub fn open(&self) -> Result<Arc<dyn Topics>, ClusterError> {
        Ok(match self {
            TopicBackend::Embedded(dir) => riffle_connectors::rocketmq::shared_store(dir)?,
            TopicBackend::Cluster(address) => {
                riffle_connectors::rocketmq::cluster::connect(address).map_err(|e| {
                    ClusterError::new(format!("RocketMQ cluster at {}: {e}", address.namesrv))
                })?
            }
        })
    }

    /// The embedded store's directory (`None` on a cluster).
    pub fn store_dir(&self) -> Option<&Path> {
        match self {
            TopicBackend::Embedded(dir) => Some(dir),
            TopicBackend::Cluster(_) => None,
        }
    }

    /// Writes the backend into a connector's options.
    pub fn write_options(&self, opts: &mut BTreeMap<String, String>) {
        match self {
            TopicBackend::Embedded(dir) => {
                opts.insert(options::STORE_DIR.into(), dir.display().to_string());
            }
            TopicBackend::Cluster(address) => {
                opts.insert(options::NAMESRV.into(), address.namesrv.clone());
                if let Some(c) = &address.credentials {
                    opts.insert(options::ACCESS_KEY.into(), c.access_key.clone());
                    opts.insert(options::SECRET_KEY.into(), c.secret_key.clone());
                }
            }
        }
    }

    /// The backend written by [`Self::write_options`].
    pub fn from_options(opts: &BTreeMap<String, String>) -> Result<Self, ClusterError> {
        if let Some(namesrv) = opts.get(options::NAMESRV) {
            let credentials = match (opts.get(options::ACCESS_KEY), opts.get(options::SECRET_KEY)) {
                (Some(access_key), Some(secret_key)) => Some(Credentials {
                    access_key: access_key.clone(),
                    secret_key: secret_key.clone(),
                }),
                _ => None,
            };
            return Ok(TopicBackend::Cluster(ClusterAddress {
                namesrv: namesrv.clone(),
                credentials,
            }));
        }
        opts.get(options::STORE_DIR)
            .map(|dir| TopicBackend::Embedded(PathBuf::from(dir)))
            .ok_or_else(|| {
                ClusterError::new("shuffle connector: missing option 'store-dir' or 'namesrv'")
            })
    }

    /// Where the topics are, for messages.
    pub fn describe(&self) -> String {
        match self {
            TopicBackend::Embedded(dir) => format!("the embedded store {}", dir.display()),
            TopicBackend::Cluster(address) => {
                format!("the RocketMQ cluster at {}", address.namesrv)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backend_round_trips_through_connector_options() {
        for backend in [
            TopicBackend::Embedded(PathBuf::from("/data/.riffle")),
            TopicBackend::Cluster(ClusterAddress {
                namesrv: "10.0.0.1:9876;10.0.0.2:9876".into(),
                credentials: Some(Credentials {
                    access_key: "ak".into(),
                    secret_key: "sk".into(),
                }),
            }),
        ] {
            let mut opts = BTreeMap::new();
            backend.write_options(&mut opts);
            assert_eq!(TopicBackend::from_options(&opts).unwrap(), backend);
        }
        assert!(TopicBackend::from_options(&BTreeMap::new()).is_err());
    }
}
