//! Splitting a job graph into stages joined by shuffle topics.
//!
//! A *stage* is a set of operators joined by forward edges; every other edge (hash, broadcast,
//! global, rebalance) crosses from one stage to another through a shuffle topic. A stage runs
//! as `units` independent copies, one per queue: a stage with rocketmq sources has one unit per
//! queue of its topics (the most queues among them); a stage with other sources keeps its
//! planned parallelism; a stage fed only by shuffle topics has `riffle.shuffle.queues` units
//! (default: the most units of any source stage), or one if a global edge feeds it (its
//! operators see every row). A shuffle topic has one queue per unit of the stage it feeds.

use std::path::PathBuf;

use riffle_connectors::options::Options;
use riffle_connectors::rocketmq::options::{normalize, Role};
use riffle_plan::{JobGraph, OperatorId, OperatorKind, Partitioning};
use riffle_store::{StoreError, TopicConfig, Topics};

use crate::backend::TopicBackend;
use crate::shuffle::Distribution;
use crate::ClusterError;

/// Option: the queues of shuffle topics feeding non-global stages.
pub const SHUFFLE_QUEUES_OPTION: &str = "riffle.shuffle.queues";

/// A job split into stages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagePlan {
    /// The job's id (prefix of its shuffle topics and unit ids).
    pub job: String,
    /// The stages; a stage's index is its position.
    pub stages: Vec<Stage>,
    /// The shuffle topics between stages.
    pub shuffles: Vec<Shuffle>,
    /// Where the shuffle topics (and the job's other topics) live: the backend of its
    /// rocketmq sources.
    pub backend: TopicBackend,
}

/// Operators that run together, as `units` copies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stage {
    /// The stage's operators, in the graph's (topological) order.
    pub operators: Vec<OperatorId>,
    /// Number of units (copies, one per queue).
    pub units: usize,
}

/// A shuffle topic carrying one edge of the job graph between two stages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shuffle {
    /// Index of the edge in the job graph.
    pub edge: usize,
    /// Topic name: `<job>-<producer>-<consumer>-shuffle`.
    pub topic: String,
    /// Queues (the consuming stage's units).
    pub queues: u32,
    /// The producing stage.
    pub from_stage: usize,
    /// The consuming stage.
    pub to_stage: usize,
    /// How rows are spread over the queues.
    pub distribution: Distribution,
}

impl StagePlan {
    /// The stage an operator belongs to.
    pub fn stage_of(&self, op: OperatorId) -> Option<usize> {
        self.stages.iter().position(|s| s.operators.contains(&op))
    }

    /// Creates the shuffle topics that are missing; an existing one must have its queues.
    pub fn create_topics(&self, store: &dyn Topics) -> Result<(), ClusterError> {
        for s in &self.shuffles {
            let config = TopicConfig {
                queues: s.queues,
                ..TopicConfig::default()
            };
            match store.create_topic(&s.topic, config) {
                Ok(()) | Err(StoreError::TopicExists(_)) => {}
                Err(e) => {
                    return Err(ClusterError::new(format!(
                        "cannot create shuffle topic '{}': {e}",
                        s.topic
                    )))
                }
            }
            let queues = store
                .topic_config(&s.topic)
                .map_err(|e| ClusterError::new(format!("shuffle topic '{}': {e}", s.topic)))?
                .queues;
            if queues != s.queues {
                return Err(ClusterError::new(format!(
                    "shuffle topic '{}' has {queues} queues, the job needs {}: the job changed since it was created (run it under another job id, or delete the topic)",
                    s.topic, s.queues
                )));
            }
        }
        Ok(())
    }
}

/// `name` as a topic or group name of the store: characters other than `A-Z a-z 0-9 _ - %`
/// (a job id may hold `.`) become `_`.
pub fn store_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '%') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Splits `graph` (job `job`) into stages; `queues_of` gives the queue count of a rocketmq
/// source's topic (`None`: the topic is missing).
pub fn split(
    graph: &JobGraph,
    job: &str,
    queues_of: &dyn Fn(&str, &TopicBackend) -> Option<u32>,
) -> Result<StagePlan, ClusterError> {
    let n = graph.operators.len();
    // Union-find over forward edges.
    let mut parent: Vec<usize> = (0..n).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    for e in &graph.edges {
        if e.from >= n || e.to >= n {
            return Err(ClusterError::new("an edge names an unknown operator"));
        }
        if e.partitioning == Partitioning::Forward {
            let (a, b) = (root(&mut parent, e.from), root(&mut parent, e.to));
            parent[a.max(b)] = a.min(b);
        }
    }
    let mut stage_of_root: Vec<Option<usize>> = vec![None; n];
    let mut stages: Vec<Stage> = Vec::new();
    for op in 0..n {
        let r = root(&mut parent, op);
        let s = *stage_of_root[r].get_or_insert_with(|| {
            stages.push(Stage {
                operators: Vec::new(),
                units: 0,
            });
            stages.len() - 1
        });
        stages[s].operators.push(op);
    }
    let mut backend: Option<TopicBackend> = None;
    // Units of stages with sources.
    for stage in &mut stages {
        let mut topic_queues: Option<u32> = None;
        let mut has_source = false;
        for op in &stage.operators {
            match &graph.operators[*op].kind {
                OperatorKind::Source { connector } => {
                    has_source = true;
                    if connector.connector != riffle_connectors::rocketmq::options::CONNECTOR {
                        continue;
                    }
                    let mut options = Options::new(connector);
                    let opts = normalize(connector, Role::Source, &mut options)?;
                    let source_backend = match opts.cluster {
                        Some(address) => TopicBackend::Cluster(address),
                        None => TopicBackend::Embedded(opts.store_dir),
                    };
                    let queues = queues_of(&opts.topic, &source_backend).ok_or_else(|| {
                        ClusterError::new(format!(
                            "rocketmq table '{}': topic '{}' does not exist in {} (create it with `riffle topic create {} --queues N`)",
                            connector.table,
                            opts.topic,
                            source_backend.describe(),
                            opts.topic
                        ))
                    })?;
                    topic_queues = Some(topic_queues.unwrap_or(0).max(queues));
                    match &backend {
                        None => backend = Some(source_backend),
                        Some(b) if *b == source_backend => {}
                        Some(b) => {
                            return Err(ClusterError::new(format!(
                                "unsupported feature: a job run by a group (--group) whose sources live in different places (table '{}' reads {}, another source {}): its shuffle topics need one",
                                connector.table,
                                source_backend.describe(),
                                b.describe()
                            )))
                        }
                    }
                }
                OperatorKind::Values { .. } => has_source = true,
                _ => {}
            }
        }
        let planned = stage
            .operators
            .iter()
            .map(|op| graph.operators[*op].parallelism)
            .max()
            .unwrap_or(1);
        stage.units = match (topic_queues, has_source) {
            (Some(q), _) => q.max(1) as usize,
            (None, true) => planned.max(1),
            (None, false) => 0,
        };
    }
    let default_queues = match graph.config.get(SHUFFLE_QUEUES_OPTION) {
        Some(text) => text
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|q| *q > 0)
            .ok_or_else(|| {
                ClusterError::new(format!(
                    "'{SHUFFLE_QUEUES_OPTION}' must be a positive number, got '{text}'"
                ))
            })?,
        None => stages.iter().map(|s| s.units).max().unwrap_or(1).max(1),
    };
    for (index, stage) in stages.iter_mut().enumerate() {
        if stage.units == 0 {
            // A stage fed through a global edge has one unit, as its operators one subtask.
            let global = graph.edges.iter().any(|e| {
                e.partitioning == Partitioning::Global
                    && stage_of_root[root(&mut parent, e.to)] == Some(index)
            });
            stage.units = if global { 1 } else { default_queues };
        }
    }
    let mut shuffles = Vec::new();
    for (index, e) in graph.edges.iter().enumerate() {
        if e.partitioning == Partitioning::Forward {
            continue;
        }
        let from_stage = stage_of_root[root(&mut parent, e.from)].unwrap_or(0);
        let to_stage = stage_of_root[root(&mut parent, e.to)].unwrap_or(0);
        let distribution = match &e.partitioning {
            Partitioning::Hash(keys) => Distribution::Hash(keys.clone()),
            Partitioning::Broadcast => Distribution::Broadcast,
            Partitioning::Global => Distribution::Global,
            Partitioning::Rebalance | Partitioning::Forward => Distribution::Rebalance,
        };
        let queues = u32::try_from(stages[to_stage].units)
            .map_err(|_| ClusterError::new("too many units"))?;
        shuffles.push(Shuffle {
            edge: index,
            topic: store_name(&format!("{job}-{}-{}-shuffle", e.from, e.to)),
            queues,
            from_stage,
            to_stage,
            distribution,
        });
    }
    let backend = match (backend, graph.config.get("riffle.store.dir")) {
        (Some(TopicBackend::Cluster(address)), _) => TopicBackend::Cluster(address),
        (_, Some(dir)) => TopicBackend::Embedded(PathBuf::from(dir)),
        (Some(b), None) => b,
        (None, None) => TopicBackend::Embedded(PathBuf::from(".riffle")),
    };
    Ok(StagePlan {
        job: job.to_string(),
        stages,
        shuffles,
        backend,
    })
}
