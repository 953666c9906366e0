//! Units: one queue's share of a stage, run as a job of its own.
//!
//! A unit's job graph holds its stage's operators (each with one subtask) plus a shuffle
//! source for every shuffle topic feeding the stage and a shuffle sink for every one it
//! feeds. It runs on the ordinary runtime as subtask `unit` of `units`
//! ([`riffle_runtime::run_as_subtask`]): its rocketmq sources read their topic's queue `unit`,
//! its shuffle sources queue `unit` of their topics. It checkpoints on its own, under the
//! job id `<job>.<stage>-<unit>`, so it can stop in one process and resume in another.

use std::collections::BTreeMap;
use std::fmt;

use riffle_plan::{ConnectorSpec, Edge, JobGraph, Operator, OperatorKind, Partitioning};

use crate::shuffle::{self, options};
use crate::stages::StagePlan;
use crate::ClusterError;

/// Checkpoint interval of units when the job sets none: a unit must checkpoint to hand its
/// output to the next stage and to move between processes.
pub const DEFAULT_CHECKPOINT_INTERVAL: &str = "1 s";

/// One unit of a job: a stage and a queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UnitId {
    /// The stage.
    pub stage: usize,
    /// The queue (the unit's index among its stage's units).
    pub unit: usize,
}

impl fmt::Display for UnitId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.stage, self.unit)
    }
}

impl UnitId {
    /// Parses `<stage>-<unit>`.
    pub fn parse(text: &str) -> Option<Self> {
        let (stage, unit) = text.split_once('-')?;
        Some(Self {
            stage: stage.parse().ok()?,
            unit: unit.parse().ok()?,
        })
    }

    /// The unit's own job id (naming its checkpoints): `<job>.<stage>-<unit>`.
    pub fn job_id(&self, job: &str) -> String {
        format!("{job}.{self}")
    }
}

/// As its text `<stage>-<unit>`, so that it can key a JSON object.
impl serde::Serialize for UnitId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for UnitId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("'{text}' is not a unit")))
    }
}

/// The consumer group of a rocketmq source of a unit: the table's own, or a group private to
/// the source operator (`<job>-source-<operator>`). A unit that starts without a checkpoint of
/// its own starts from its group's committed offsets, so no other source operator may commit
/// to that group: two INSERTs of a statement set reading one table are two source operators
/// over the same queues, and with a shared group the one that starts later would skip what
/// the other had already consumed. Offsets are committed when a unit's checkpoint completes;
/// `riffle job status` reads them as the queue's consumed position.
fn with_group(
    graph: &JobGraph,
    operator: usize,
    connector: &mut ConnectorSpec,
    job: &str,
) -> Result<(), ClusterError> {
    let Some(opts) = rocketmq_source(connector)? else {
        return Ok(());
    };
    match opts.group {
        None => {
            connector.options.insert(
                "rocketmq.source.group".to_string(),
                source_group(job, operator),
            );
        }
        Some(group) if !opts.startup_explicit => {
            let sharing = graph
                .operators
                .iter()
                .filter(|op| op.id != operator)
                .filter_map(|op| match &op.kind {
                    OperatorKind::Source { connector } => rocketmq_source(connector).ok().flatten(),
                    _ => None,
                })
                .any(|other| other.topic == opts.topic && other.group.as_deref() == Some(&group));
            if sharing {
                return Err(ClusterError::new(format!(
                    "unsupported feature: `--group` with several sources of topic '{}' in consumer group '{group}' (table '{}' is read more than once): each would start from the offsets the others committed; drop the table's consumer group (each source then gets its own) or give every reading its own table",
                    opts.topic, connector.table
                )));
            }
        }
        Some(_) => {}
    }
    Ok(())
}

/// The consumer group of source operator `operator` of job `job` when its table names none.
pub fn source_group(job: &str, operator: usize) -> String {
    format!("{job}-source-{operator}")
}

/// The options of a rocketmq source (`None` for other connectors).
fn rocketmq_source(
    connector: &ConnectorSpec,
) -> Result<Option<riffle_connectors::rocketmq::options::RocketMqOptions>, ClusterError> {
    if connector.connector != riffle_connectors::rocketmq::options::CONNECTOR {
        return Ok(None);
    }
    let mut options = riffle_connectors::options::Options::new(connector);
    Ok(Some(riffle_connectors::rocketmq::options::normalize(
        connector,
        riffle_connectors::rocketmq::options::Role::Source,
        &mut options,
    )?))
}

impl StagePlan {
    /// Every unit of the job, sorted.
    pub fn units(&self) -> Vec<UnitId> {
        self.stages
            .iter()
            .enumerate()
            .flat_map(|(stage, s)| (0..s.units).map(move |unit| UnitId { stage, unit }))
            .collect()
    }

    /// The job graph of `unit`'s stage (the same for every unit of the stage).
    pub fn stage_graph(&self, graph: &JobGraph, stage: usize) -> Result<JobGraph, ClusterError> {
        let s = self
            .stages
            .get(stage)
            .ok_or_else(|| ClusterError::new(format!("the job has no stage {stage}")))?;
        let mut operators: Vec<Operator> = Vec::new();
        let mut edges: Vec<Edge> = Vec::new();
        let mut new_id: BTreeMap<usize, usize> = BTreeMap::new();
        let spec = |topic: &str, extra: (&str, String)| {
            let mut opts = BTreeMap::new();
            opts.insert("connector".to_string(), shuffle::CONNECTOR.to_string());
            opts.insert(options::TOPIC.to_string(), topic.to_string());
            self.backend.write_options(&mut opts);
            opts.insert(options::UNIT.to_string(), format!("{}.{stage}", self.job));
            opts.insert(extra.0.to_string(), extra.1);
            ConnectorSpec {
                table: format!("shuffle {topic}"),
                connector: shuffle::CONNECTOR.to_string(),
                options: opts,
                ..ConnectorSpec::default()
            }
        };
        // Shuffle sources first: they feed the stage's operators.
        let mut incoming = Vec::new();
        for sh in self.shuffles.iter().filter(|sh| sh.to_stage == stage) {
            let edge = &graph.edges[sh.edge];
            let producer = &graph.operators[edge.from];
            let id = operators.len();
            let producers = self.stages[sh.from_stage].units.to_string();
            let mut connector = spec(&sh.topic, (options::PRODUCERS, producers));
            connector
                .options
                .insert(options::GROUP.to_string(), self.job.clone());
            operators.push(Operator {
                id,
                kind: OperatorKind::Source { connector },
                parallelism: 1,
                schema: producer.schema.clone(),
                changelog: edge.changelog,
            });
            incoming.push((id, edge));
        }
        for op in &s.operators {
            let id = operators.len();
            new_id.insert(*op, id);
            let mut copy = graph.operators[*op].clone();
            copy.id = id;
            copy.parallelism = 1;
            if let OperatorKind::Source { connector } = &mut copy.kind {
                with_group(graph, *op, connector, &self.job)?;
            }
            operators.push(copy);
        }
        for (source, edge) in incoming {
            edges.push(Edge {
                from: source,
                to: new_id[&edge.to],
                input: edge.input,
                partitioning: Partitioning::Forward,
                changelog: edge.changelog,
            });
        }
        for e in &graph.edges {
            if let (Some(from), Some(to)) = (new_id.get(&e.from), new_id.get(&e.to)) {
                if e.partitioning == Partitioning::Forward {
                    edges.push(Edge {
                        from: *from,
                        to: *to,
                        input: e.input,
                        partitioning: Partitioning::Forward,
                        changelog: e.changelog,
                    });
                }
            }
        }
        for sh in self.shuffles.iter().filter(|sh| sh.from_stage == stage) {
            let edge = &graph.edges[sh.edge];
            let producer = &graph.operators[edge.from];
            let id = operators.len();
            operators.push(Operator {
                id,
                kind: OperatorKind::Sink {
                    connector: spec(&sh.topic, (options::DISTRIBUTION, sh.distribution.option())),
                },
                parallelism: 1,
                schema: producer.schema.clone(),
                changelog: edge.changelog,
            });
            edges.push(Edge {
                from: new_id[&edge.from],
                to: id,
                input: 0,
                partitioning: Partitioning::Forward,
                changelog: edge.changelog,
            });
        }
        let mut config = graph.config.clone();
        config
            .entry("execution.checkpointing.interval".to_string())
            .or_insert_with(|| DEFAULT_CHECKPOINT_INTERVAL.to_string());
        Ok(JobGraph {
            operators,
            edges,
            config,
            functions: graph.functions.clone(),
        })
    }
}
