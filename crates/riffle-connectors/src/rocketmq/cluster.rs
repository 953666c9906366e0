//! A real RocketMQ cluster behind [`Topics`], through `rocketmq-client-rust` (remoting protocol;
//! Apache RocketMQ 4.x/5.x brokers and the Rust broker speak it).
//!
//! Riffle's queue `i` of a topic is the `i`-th of the topic's message queues ordered by broker
//! name and queue id, so one broker's queue ids are Riffle's. Reads are explicit per-queue pulls
//! from an offset (the classic pull consumer: nothing is prefetched or committed behind
//! Riffle's back), writes are batches sent to one queue, and consumer-group offsets are read
//! and written on the broker only when Riffle asks — which is what checkpoints and replay need.
//!
//! The client is asynchronous; this module owns one client runtime per process and blocks on
//! it, so callers (source and sink threads, the CLI) stay synchronous.

// The client marks its classic pull consumer deprecated in favour of the lite pull consumer,
// which prefetches in the background and so cannot read one queue from an exact offset on
// demand; the classic one can, and replay from checkpointed offsets needs exactly that.
#![allow(deprecated)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use super::options::ClusterAddress;
use riffle_store::{
    CleanupPolicy, GroupLag, Message, QueueInfo, QueueLag, Result, StoreError, StoredMessage,
    TopicConfig, TopicInfo, Topics,
};
use rocketmq_client_rust::{
    AclClientRPCHook, ClientConfig, ClientInstanceHandle, ClientRpcHook, ClientRuntime,
    ClientRuntimeConfig, DefaultMQAdminExt, DefaultMQProducer, DefaultMQPullConsumer, OffsetAdmin,
    PullStatus, RouteAdmin, SessionCredentials, TelemetryHandle, TopicAdmin,
};
use rocketmq_model::common::config::TopicConfig as ClusterTopicConfig;
use rocketmq_model::common::message::message_ext::MessageExt;
use rocketmq_model::common::message::message_queue::MessageQueue;
use rocketmq_model::common::message::message_single::Message as ClusterMessage;
use rocketmq_model::result::PullOutcome;
use rocketmq_protocol::protocol::header::namesrv::topic_operation_header::TopicRequestHeader;
use rocketmq_protocol::protocol::header::pull_message_request_header::PullMessageRequestHeader;
use rocketmq_protocol::rpc::rpc_request_header::RpcRequestHeader;
use rocketmq_runtime::{RuntimeConfig, RuntimeOwner};

/// How long one request to the name server or a broker may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a new topic may take to appear in the name server's routes.
const ROUTE_WAIT: Duration = Duration::from_secs(15);
/// Producer group of Riffle's sinks and `riffle topic produce`.
const PRODUCER_GROUP: &str = "riffle-producer";
/// Consumer group used for reads that commit nothing.
const READER_GROUP: &str = "riffle-reader";
/// Attribute that makes a topic a compaction topic (settable only at creation).
const COMPACTION_ATTRIBUTE: (&str, &str) = ("+cleanup.policy", "COMPACTION");
/// The property marking a message whose body is empty (see [`to_cluster`]).
const EMPTY_BODY_PROPERTY: &str = "RIFFLE_EMPTY_BODY";
/// Clients pulling messages in parallel (each handles one request at a time).
const PULLERS: usize = 8;
/// The pull request flag that carries the subscription in the request.
const PULL_FLAG_SUBSCRIPTION: i32 = 1 << 2;
/// The most bytes one pull may return (a broker's own limit is usually lower).
const PULL_MAX_BYTES: i32 = 8 << 20;
/// Read and write permission of a topic.
const PERM_READ_WRITE: u32 = 6;

/// The process's client runtime (threads for the client's I/O), created on first use.
fn client_runtime() -> Result<&'static (RuntimeOwner, Arc<ClientRuntime>)> {
    static RUNTIME: OnceLock<std::result::Result<(RuntimeOwner, Arc<ClientRuntime>), String>> =
        OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            let owner = RuntimeOwner::plan(RuntimeConfig::for_parallelism("riffle-rocketmq", 2))
                .map_err(|e| format!("{e:?}"))?
                .build()
                .map_err(|e| e.to_string())?;
            let client = ClientRuntime::try_new(
                owner.root_context().component("riffle"),
                ClientRuntimeConfig::default(),
                TelemetryHandle::noop(),
            )
            .map_err(|e| e.to_string())?;
            Ok((owner, client))
        })
        .as_ref()
        .map_err(|e| StoreError::Remote(format!("cannot start the RocketMQ client runtime: {e}")))
}

/// Runs `make()`'s future to completion on the client runtime, from any thread: a thread that
/// is itself inside a Tokio runtime hands the work to a helper thread (Tokio forbids nesting).
fn block_on<T, F>(make: impl FnOnce() -> F + Send) -> Result<T>
where
    T: Send,
    F: Future<Output = T>,
{
    let (owner, _) = client_runtime()?;
    if tokio::runtime::Handle::try_current().is_err() {
        return Ok(owner.block_on(make()));
    }
    std::thread::scope(|scope| {
        scope
            .spawn(|| owner.block_on(make()))
            .join()
            .map_err(|_| StoreError::Remote("the RocketMQ client thread panicked".into()))
    })
}

/// Clusters open in this process, by address and credentials: every table and command on one
/// cluster shares its clients.
static OPEN_CLUSTERS: Mutex<Option<HashMap<ClusterAddress, Weak<Cluster>>>> = Mutex::new(None);

/// The cluster behind a name server (`host:port`, several separated by `;`), connected and
/// checked to be reachable; shared with other users in this process.
pub fn connect(address: &ClusterAddress) -> Result<Arc<Cluster>> {
    if address.namesrv.trim().is_empty() {
        return Err(StoreError::Invalid(
            "the RocketMQ name server address is empty".into(),
        ));
    }
    let mut guard = OPEN_CLUSTERS
        .lock()
        .map_err(|_| StoreError::Remote("the RocketMQ cluster registry is poisoned".into()))?;
    let clusters = guard.get_or_insert_with(HashMap::new);
    if let Some(cluster) = clusters.get(address).and_then(Weak::upgrade) {
        return Ok(cluster);
    }
    let cluster = Arc::new(Cluster::connect(address)?);
    clusters.insert(address.clone(), Arc::downgrade(&cluster));
    Ok(cluster)
}

/// The cluster behind the name server `namesrv`, without credentials (`riffle topic --namesrv`).
pub fn connect_namesrv(namesrv: &str) -> Result<Arc<Cluster>> {
    connect(&ClusterAddress {
        namesrv: namesrv.trim().to_string(),
        credentials: None,
    })
}

/// Clients of one RocketMQ cluster.
pub struct Cluster {
    namesrv: String,
    /// Signs requests with the ACL credentials, when there are some.
    acl: Option<Arc<AclClientRPCHook>>,
    admin: DefaultMQAdminExt,
    /// Started on the first write.
    producer: tokio::sync::Mutex<Option<DefaultMQProducer>>,
    /// Pull consumers by group (the group whose committed offsets they read).
    readers: Mutex<HashMap<String, Arc<DefaultMQPullConsumer>>>,
    /// Clients that pull messages ([`Cluster::pull`]), started on first use.
    pullers: Mutex<Vec<Arc<ClientInstanceHandle>>>,
    /// The next puller to use.
    next_puller: AtomicUsize,
    /// Consumer groups this process made known to the broker ([`Cluster::ensure_group`]).
    known_groups: Mutex<HashSet<String>>,
    /// Queues of each topic in Riffle's order, and their brokers' addresses.
    routes: Mutex<HashMap<String, Arc<Route>>>,
}

/// Where a topic's queues are.
struct Route {
    queues: Vec<MessageQueue>,
    /// Master address by broker name.
    brokers: BTreeMap<String, String>,
    /// Cluster names the topic's brokers belong to.
    clusters: Vec<String>,
}

impl Route {
    fn queue(&self, topic: &str, queue: u32) -> Result<(&MessageQueue, &str)> {
        let mq = self
            .queues
            .get(queue as usize)
            .ok_or_else(|| StoreError::QueueNotFound {
                topic: topic.to_string(),
                queue,
                queues: self.queues.len() as u32,
            })?;
        let addr = self.brokers.get(mq.broker_name().as_str()).ok_or_else(|| {
            StoreError::Remote(format!(
                "no master broker of '{}' serves topic '{topic}'",
                mq.broker_name()
            ))
        })?;
        Ok((mq, addr))
    }
}

impl Cluster {
    fn connect(address: &ClusterAddress) -> Result<Self> {
        let namesrv = address.namesrv.trim();
        let (_, runtime) = client_runtime()?;
        let acl = address.credentials.as_ref().map(|c| {
            Arc::new(AclClientRPCHook::new(SessionCredentials::with_keys(
                c.access_key.as_str(),
                c.secret_key.as_str(),
            )))
        });
        let mut admin = match &acl {
            Some(hook) => DefaultMQAdminExt::with_admin_ext_group_rpc_hook_and_timeout(
                runtime.clone(),
                "riffle-admin",
                hook.clone(),
                REQUEST_TIMEOUT,
            ),
            None => DefaultMQAdminExt::with_admin_ext_group_and_timeout(
                runtime.clone(),
                "riffle-admin",
                REQUEST_TIMEOUT,
            ),
        };
        admin.set_namesrv_addr(namesrv);
        let admin =
            block_on(|| async move { admin.start().await.map(|()| admin) })?.map_err(|e| {
                StoreError::Remote(format!(
                    "cannot start a RocketMQ admin client for name server {namesrv}: {e}"
                ))
            })?;
        let cluster = Cluster {
            namesrv: namesrv.to_string(),
            acl,
            admin,
            producer: tokio::sync::Mutex::new(None),
            readers: Mutex::new(HashMap::new()),
            pullers: Mutex::new(Vec::new()),
            next_puller: AtomicUsize::new(0),
            known_groups: Mutex::new(HashSet::new()),
            routes: Mutex::new(HashMap::new()),
        };
        // Fail now, naming the address, rather than at the first read.
        if let Err(e) = cluster.request(|c| c.admin.examine_broker_cluster_info())? {
            return Err(StoreError::Remote(format!(
                "RocketMQ name server {namesrv} is unreachable or has no broker: {e}"
            )));
        }
        Ok(cluster)
    }

    /// The name server address.
    pub fn namesrv(&self) -> &str {
        &self.namesrv
    }

    /// Runs one client request with a deadline; errors name the cluster and the action.
    fn call<'a, T, E, F>(
        &'a self,
        action: &str,
        request: impl FnOnce(&'a Self) -> F + Send,
    ) -> Result<T>
    where
        T: Send,
        E: std::fmt::Display + Send,
        F: Future<Output = std::result::Result<T, E>> + 'a,
    {
        self.request(request)?
            .map_err(|failure| self.error(action, failure))
    }

    /// Runs one client request with a deadline; `Ok(Err(..))` says why the cluster failed it.
    fn request<'a, T, E, F>(
        &'a self,
        request: impl FnOnce(&'a Self) -> F + Send,
    ) -> Result<std::result::Result<T, String>>
    where
        T: Send,
        E: std::fmt::Display + Send,
        F: Future<Output = std::result::Result<T, E>> + 'a,
    {
        let outcome =
            block_on(|| async move { tokio::time::timeout(REQUEST_TIMEOUT, request(self)).await })?;
        Ok(match outcome {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("no answer within {} s", REQUEST_TIMEOUT.as_secs())),
        })
    }

    fn error(&self, action: &str, e: impl std::fmt::Display) -> StoreError {
        StoreError::Remote(format!(
            "RocketMQ cluster at {}: {action}: {e}",
            self.namesrv
        ))
    }

    /// The topic's route, cached; [`StoreError::TopicNotFound`] if the cluster has no such topic.
    fn route(&self, topic: &str) -> Result<Arc<Route>> {
        if let Some(route) = self.cached_route(topic)? {
            return Ok(route);
        }
        let route = self
            .fetch_route(topic)?
            .ok_or_else(|| StoreError::TopicNotFound(topic.to_string()))?;
        let route = Arc::new(route);
        self.routes
            .lock()
            .map_err(|_| StoreError::Remote("route cache poisoned".into()))?
            .insert(topic.to_string(), route.clone());
        Ok(route)
    }

    fn cached_route(&self, topic: &str) -> Result<Option<Arc<Route>>> {
        Ok(self
            .routes
            .lock()
            .map_err(|_| StoreError::Remote("route cache poisoned".into()))?
            .get(topic)
            .cloned())
    }

    fn forget_route(&self, topic: &str) {
        if let Ok(mut routes) = self.routes.lock() {
            routes.remove(topic);
        }
    }

    /// Asks the name server for a topic's route; `None` when the topic does not exist.
    fn fetch_route(&self, topic: &str) -> Result<Option<Route>> {
        if !self.topics()?.iter().any(|t| t == topic) {
            return Ok(None);
        }
        let data = self.call("reading the topic route", |c| {
            c.admin.examine_topic_route_info(topic.into())
        })?;
        let Some(data) = data else { return Ok(None) };
        let mut brokers = BTreeMap::new();
        let mut clusters = Vec::new();
        for b in &data.broker_datas {
            // Broker id 0 is the master, which takes writes and offset commits.
            if let Some(addr) = b.broker_addrs().get(&0) {
                brokers.insert(b.broker_name().to_string(), addr.to_string());
            }
            if !clusters.iter().any(|c| c == b.cluster()) {
                clusters.push(b.cluster().to_string());
            }
        }
        let mut queue_datas = data.queue_datas.clone();
        queue_datas.sort_by(|a, b| a.broker_name().cmp(b.broker_name()));
        let queues = queue_datas
            .iter()
            .flat_map(|q| {
                (0..q.read_queue_nums().min(q.write_queue_nums())).map(move |id| {
                    MessageQueue::from_parts(topic, q.broker_name().clone(), id as i32)
                })
            })
            .collect::<Vec<_>>();
        if queues.is_empty() {
            return Ok(None);
        }
        Ok(Some(Route {
            queues,
            brokers,
            clusters,
        }))
    }

    /// A started pull consumer of `group`.
    fn reader(&self, group: &str) -> Result<Arc<DefaultMQPullConsumer>> {
        let mut readers = self
            .readers
            .lock()
            .map_err(|_| StoreError::Remote("reader registry poisoned".into()))?;
        if let Some(reader) = readers.get(group) {
            return Ok(reader.clone());
        }
        let (_, runtime) = client_runtime()?;
        let mut builder = DefaultMQPullConsumer::builder(runtime.clone())
            .consumer_group(group)
            .name_server_addr(self.namesrv.as_str())
            .consumer_pull_timeout(REQUEST_TIMEOUT);
        if let Some(hook) = &self.acl {
            builder = builder.rpc_hook(hook.clone());
        }
        let consumer = builder
            .build()
            .map_err(|e| self.error(&format!("creating a consumer of group '{group}'"), e))?;
        self.call(&format!("starting a consumer of group '{group}'"), |_| {
            consumer.start()
        })?;
        let consumer = Arc::new(consumer);
        readers.insert(group.to_string(), consumer.clone());
        Ok(consumer)
    }

    /// Makes the broker know consumer group `group` before its first offset commit: a broker
    /// refuses to store offsets of a group it has no subscription entry for, and creates that
    /// entry (auto-create, on by default) when the group first pulls — which a group that only
    /// commits what another consumer read (a shuffle source's status group) never does.
    fn ensure_group(&self, group: &str, mq: &MessageQueue) -> Result<()> {
        let known = self
            .known_groups
            .lock()
            .map_err(|_| StoreError::Remote("group registry poisoned".into()))?
            .contains(group);
        if known {
            return Ok(());
        }
        let addr = self.master_of(mq)?;
        self.pull(group, mq, &addr, 0, 1)?;
        self.known_groups
            .lock()
            .map_err(|_| StoreError::Remote("group registry poisoned".into()))?
            .insert(group.to_string());
        Ok(())
    }

    /// The master broker's address of a queue.
    fn master_of(&self, mq: &MessageQueue) -> Result<String> {
        let route = self.route(mq.topic())?;
        route
            .brokers
            .get(mq.broker_name().as_str())
            .cloned()
            .ok_or_else(|| {
                StoreError::Remote(format!(
                    "no master broker of '{}' serves topic '{}'",
                    mq.broker_name(),
                    mq.topic()
                ))
            })
    }

    /// One of the process's pulling clients, started on first use (round robin over
    /// [`PULLERS`]: a client handles one request at a time).
    fn puller(&self) -> Result<Arc<ClientInstanceHandle>> {
        let mut pullers = self
            .pullers
            .lock()
            .map_err(|_| StoreError::Remote("puller registry poisoned".into()))?;
        let index = self.next_puller.fetch_add(1, Ordering::Relaxed) % PULLERS;
        if let Some(puller) = pullers.get(index) {
            return Ok(puller.clone());
        }
        let (_, runtime) = client_runtime()?;
        let mut config = ClientConfig::default();
        config.set_namesrv_addr(self.namesrv.as_str().into());
        config.set_instance_name(format!("riffle-puller-{}", std::process::id()).into());
        let hook = self.acl.clone().map(|h| h as Arc<ClientRpcHook>);
        let domain = pullers.len() as u64 + 1;
        let handle = ClientInstanceHandle::get_or_create(runtime, domain, config, hook)
            .map_err(|e| self.error("creating a pulling client", e))?;
        self.call("starting a pulling client", |_| handle.start())?;
        let handle = Arc::new(handle);
        pullers.push(handle.clone());
        Ok(handle)
    }

    /// Pulls up to `max` messages of queue `mq` from offset `offset` as consumer group `group`:
    /// one plain request to the queue's broker. Riffle does not use the client's pull consumer
    /// here: it subscribes to every topic it pulls, and every new subscription makes the client
    /// refresh all routes, rebalance the group and start background pulls of the queues the
    /// rebalance gave it — which stalled pulls for seconds once a job read dozens of topics.
    fn pull(
        &self,
        group: &str,
        mq: &MessageQueue,
        addr: &str,
        offset: u64,
        max: i32,
    ) -> Result<PullOutcome<MessageExt>> {
        let puller = self.puller()?;
        let header = PullMessageRequestHeader {
            consumer_group: group.into(),
            topic: mq.topic().clone(),
            queue_id: mq.queue_id(),
            queue_offset: offset as i64,
            max_msg_nums: max,
            // The subscription travels with the request ("*": every tag), so the broker needs
            // no registered consumer; no offset commit, no long polling.
            sys_flag: PULL_FLAG_SUBSCRIPTION,
            commit_offset: 0,
            suspend_timeout_millis: 0,
            sub_version: 0,
            subscription: Some("*".into()),
            expression_type: Some("TAG".into()),
            max_msg_bytes: Some(PULL_MAX_BYTES),
            topic_request: Some(TopicRequestHeader {
                lo: None,
                rpc: Some(RpcRequestHeader {
                    namespace: None,
                    namespaced: None,
                    broker_name: Some(mq.broker_name().clone()),
                    oneway: None,
                }),
            }),
            ..PullMessageRequestHeader::default()
        };
        let timeout = REQUEST_TIMEOUT.as_millis() as u64;
        self.call("pulling messages", |_| {
            puller.pull_outcome_from_broker(addr, header, timeout)
        })
    }

    /// Sends `messages` to one queue, starting the producer on first use.
    fn send(&self, mq: &MessageQueue, messages: Vec<ClusterMessage>) -> Result<()> {
        let (_, runtime) = client_runtime()?;
        self.call("sending messages", |c| async move {
            let mut producer = c.producer.lock().await;
            if producer.is_none() {
                let mut builder = DefaultMQProducer::builder(runtime.clone())
                    .producer_group(PRODUCER_GROUP)
                    .name_server_addr(c.namesrv.as_str())
                    .send_msg_timeout(REQUEST_TIMEOUT.as_millis() as u32);
                if let Some(hook) = &c.acl {
                    builder = builder.rpc_hook(hook.clone());
                }
                let mut started = builder.build();
                started.start().await?;
                *producer = Some(started);
            }
            match producer.as_ref() {
                Some(p) if messages.len() == 1 => {
                    let message = messages.into_iter().next().unwrap_or_default();
                    p.send_to_queue(message, mq.clone()).await.map(|_| ())
                }
                Some(p) => p
                    .send_batch_to_queue(messages, mq.clone())
                    .await
                    .map(|_| ()),
                None => Ok(()),
            }
        })
    }

    /// Waits until the name server routes `topic` (a new topic is registered asynchronously).
    fn wait_for_route(&self, topic: &str) -> Result<()> {
        let deadline = Instant::now() + ROUTE_WAIT;
        loop {
            self.forget_route(topic);
            match self.route(topic) {
                Ok(_) => return Ok(()),
                Err(StoreError::TopicNotFound(_)) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(200));
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// A stored message as Riffle's connector and CLI see it.
fn to_stored(queue: u32, m: &MessageExt) -> StoredMessage {
    let system = &rocketmq_model::common::message::STRING_HASH_SET;
    let mut properties: BTreeMap<String, String> = m
        .properties()
        .iter()
        .filter(|(k, _)| !system.contains(k.as_str()))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let empty = properties.remove(EMPTY_BODY_PROPERTY).is_some();
    StoredMessage {
        queue,
        offset: m.queue_offset().max(0) as u64,
        store_timestamp: m.store_timestamp(),
        message: Message {
            keys: m.message_inner().keys().unwrap_or_default(),
            tag: m
                .get_tags()
                .map(|t| t.to_string())
                .filter(|t| !t.is_empty()),
            properties,
            body: match m.body() {
                Some(body) if !empty => body.to_vec(),
                _ => Vec::new(),
            },
            born_timestamp: m.born_timestamp(),
        },
    }
}

/// A Riffle message as a client message for `topic`.
fn to_cluster(topic: &str, m: &Message) -> Result<ClusterMessage> {
    // A broker refuses an empty body: one byte stands in for it, and the property says so.
    let body: &[u8] = if m.body.is_empty() { b"-" } else { &m.body };
    let mut builder = ClusterMessage::builder().topic(topic).body_slice(body);
    if m.body.is_empty() {
        builder = builder
            .raw_property(EMPTY_BODY_PROPERTY, "1")
            .map_err(|e| StoreError::Invalid(format!("message property: {e}")))?;
    }
    if let Some(tag) = &m.tag {
        builder = builder.tags(tag.as_str());
    }
    if !m.keys.is_empty() {
        builder = builder.keys(m.keys.clone());
    }
    for (k, v) in &m.properties {
        builder = builder
            .raw_property(k.as_str(), v.as_str())
            .map_err(|e| StoreError::Invalid(format!("message property '{k}': {e}")))?;
    }
    Ok(builder.build_unchecked())
}

impl Topics for Cluster {
    fn location(&self) -> String {
        format!("the RocketMQ cluster at name server {}", self.namesrv)
    }

    fn topics(&self) -> Result<Vec<String>> {
        let list = self.call("listing topics", |c| c.admin.fetch_all_topic_list())?;
        // Brokers also register a topic named after themselves and after their cluster.
        let info = self.call("reading the cluster's brokers", |c| {
            c.admin.examine_broker_cluster_info()
        })?;
        let mut own: Vec<String> = Vec::new();
        for (name, broker) in info.broker_addr_table.iter().flatten() {
            own.push(name.to_string());
            own.push(broker.cluster().to_string());
        }
        let mut names: Vec<String> = list
            .topic_list
            .iter()
            .map(|t| t.to_string())
            // The cluster's own topics (routes, retries, traces, ...) are not user data.
            .filter(|t| !is_system_topic(t) && !own.contains(t))
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    fn create_topic(&self, name: &str, config: TopicConfig) -> Result<()> {
        riffle_store::validate_name("topic", name)?;
        if config.queues == 0 {
            return Err(StoreError::Invalid(
                "a topic needs at least one queue".into(),
            ));
        }
        if config.retention_ms.is_some() || config.retention_bytes.is_some() {
            return Err(StoreError::Invalid(format!(
                "unsupported feature: per-topic retention on a RocketMQ cluster (topic '{name}'); the broker's fileReservedTime applies"
            )));
        }
        if self.topics()?.iter().any(|t| t == name) {
            return Err(StoreError::TopicExists(name.to_string()));
        }
        let info = self.call("reading the cluster's brokers", |c| {
            c.admin.examine_broker_cluster_info()
        })?;
        let masters: Vec<String> = info
            .broker_addr_table
            .iter()
            .flatten()
            .filter_map(|(_, b)| b.broker_addrs().get(&0).map(|a| a.to_string()))
            .collect();
        if masters.is_empty() {
            return Err(self.error("creating a topic", "the cluster has no master broker"));
        }
        let mut topic =
            ClusterTopicConfig::with_perm(name, config.queues, config.queues, PERM_READ_WRITE);
        if config.cleanup_policy == CleanupPolicy::Compaction {
            topic
                .attributes
                .insert(COMPACTION_ATTRIBUTE.0.into(), COMPACTION_ATTRIBUTE.1.into());
        }
        for addr in masters {
            let topic = topic.clone();
            self.call(&format!("creating topic '{name}' on broker {addr}"), |c| {
                c.admin
                    .create_and_update_topic_config(addr.as_str().into(), topic)
            })?;
        }
        self.wait_for_route(name)
    }

    fn delete_topic(&self, name: &str) -> Result<()> {
        let route = self.route(name)?;
        for cluster in &route.clusters {
            self.call(&format!("deleting topic '{name}'"), |c| {
                c.admin.delete_topic(name.into(), cluster.as_str().into())
            })?;
        }
        self.forget_route(name);
        Ok(())
    }

    fn topic_config(&self, name: &str) -> Result<TopicConfig> {
        let route = self.route(name)?;
        Ok(TopicConfig {
            queues: route.queues.len() as u32,
            ..TopicConfig::default()
        })
    }

    fn describe(&self, name: &str) -> Result<TopicInfo> {
        let config = self.topic_config(name)?;
        let queues = (0..config.queues)
            .map(|q| self.queue_info(name, q))
            .collect::<Result<Vec<_>>>()?;
        let groups = self.call("listing the topic's consumer groups", |c| {
            c.admin.query_topic_consume_by_who(name.into())
        })?;
        let mut group_names: Vec<String> = groups
            .group_list
            .iter()
            .map(|g| g.to_string())
            .filter(|g| !is_system_group(g))
            .collect();
        group_names.sort();
        let mut lags = Vec::new();
        for group in group_names {
            let mut lag = GroupLag {
                group: group.clone(),
                queues: Vec::new(),
                lag: 0,
            };
            for q in &queues {
                if let Some(committed) = self.committed_offset(&group, name, q.id)? {
                    let behind = q.max_offset.saturating_sub(committed);
                    lag.lag += behind;
                    lag.queues.push(QueueLag {
                        queue: q.id,
                        committed,
                        max_offset: q.max_offset,
                        lag: behind,
                    });
                }
            }
            if !lag.queues.is_empty() {
                lags.push(lag);
            }
        }
        Ok(TopicInfo {
            name: name.to_string(),
            config,
            queues,
            groups: lags,
        })
    }

    fn queue_info(&self, topic: &str, queue: u32) -> Result<QueueInfo> {
        let route = self.route(topic)?;
        let (mq, addr) = route.queue(topic, queue)?;
        let timeout = REQUEST_TIMEOUT.as_millis() as u64;
        let min = self.call("reading a queue's min offset", |c| {
            c.admin.min_offset(addr.into(), mq.clone(), timeout)
        })?;
        let max = self.call("reading a queue's max offset", |c| {
            c.admin.max_offset(addr.into(), mq.clone(), timeout)
        })?;
        let (min, max) = (min.max(0) as u64, max.max(0) as u64);
        Ok(QueueInfo {
            id: queue,
            min_offset: min.min(max),
            max_offset: max,
            messages: max.saturating_sub(min),
            segments: 0,
            bytes: 0,
        })
    }

    fn read(&self, topic: &str, queue: u32, offset: u64, max: usize) -> Result<Vec<StoredMessage>> {
        let route = self.route(topic)?;
        let (mq, addr) = route.queue(topic, queue)?;
        let max = i32::try_from(max.clamp(1, 1024)).unwrap_or(1024);
        let mut from = offset;
        // An offset below the queue's minimum (retention removed it) starts at the minimum, as
        // the embedded store does; one retry is enough.
        for _ in 0..2 {
            let result = self.pull(READER_GROUP, mq, addr, from, max)?;
            match result.pull_status() {
                PullStatus::Found => {
                    return Ok(result
                        .messages()
                        .unwrap_or_default()
                        .iter()
                        .filter(|m| m.queue_offset() >= from as i64)
                        .map(|m| to_stored(queue, m))
                        .collect())
                }
                PullStatus::OffsetIllegal if from < result.min_offset() => {
                    from = result.min_offset();
                }
                _ => return Ok(Vec::new()),
            }
        }
        Ok(Vec::new())
    }

    fn offset_for_timestamp(&self, topic: &str, queue: u32, timestamp_ms: i64) -> Result<u64> {
        let route = self.route(topic)?;
        let (mq, addr) = route.queue(topic, queue)?;
        let timeout = REQUEST_TIMEOUT.as_millis() as u64;
        self.call("searching an offset by time", |c| {
            c.admin.search_offset(
                addr.into(),
                topic.into(),
                mq.queue_id(),
                timestamp_ms.max(0) as u64,
                timeout,
            )
        })
    }

    fn append_batch(&self, topic: &str, queue: u32, messages: &[Message]) -> Result<()> {
        if messages.is_empty() {
            return Ok(());
        }
        let route = self.route(topic)?;
        let (mq, _) = route.queue(topic, queue)?;
        let converted = messages
            .iter()
            .map(|m| to_cluster(topic, m))
            .collect::<Result<Vec<_>>>()?;
        // A batch request carries at most ~4 MB; stay well below it.
        let mut batch = Vec::new();
        let mut bytes = 0usize;
        for m in converted {
            let size = m.body().map_or(0, |b| b.len()) + 256;
            if !batch.is_empty() && (bytes + size > 1 << 20 || batch.len() >= 512) {
                self.send(mq, std::mem::take(&mut batch))?;
                bytes = 0;
            }
            bytes += size;
            batch.push(m);
        }
        self.send(mq, batch)
    }

    fn committed_offset(&self, group: &str, topic: &str, queue: u32) -> Result<Option<u64>> {
        let route = self.route(topic)?;
        let (mq, _) = route.queue(topic, queue)?;
        let reader = self.reader(group)?;
        let offset = self.call("reading a committed offset", |_| {
            reader.fetch_consume_offset(mq, true)
        })?;
        Ok((offset >= 0).then_some(offset as u64))
    }

    fn commit_offsets(&self, group: &str, topic: &str, offsets: &[(u32, u64)]) -> Result<()> {
        riffle_store::validate_name("group", group)?;
        let route = self.route(topic)?;
        for &(queue, offset) in offsets {
            let (mq, addr) = route.queue(topic, queue)?;
            self.ensure_group(group, mq)?;
            self.call("committing an offset", |c| {
                c.admin
                    .update_consume_offset(addr.into(), group.into(), mq.clone(), offset)
            })?;
        }
        Ok(())
    }

    fn flush(&self) -> Result<()> {
        // A send returns once the broker stored the message.
        Ok(())
    }
}

/// Topics the cluster keeps for itself.
fn is_system_topic(topic: &str) -> bool {
    topic == "TBW102"
        || topic == "SELF_TEST_TOPIC"
        || topic == "OFFSET_MOVED_EVENT"
        || topic == "SCHEDULE_TOPIC_XXXX"
        || topic == "BenchmarkTest"
        || topic.starts_with("rmq_sys_")
        || topic.starts_with("RMQ_SYS_")
        || topic.starts_with("%RETRY%")
        || topic.starts_with("%DLQ%")
        || topic.starts_with("%LMQ%")
        || topic.ends_with("_REPLY_TOPIC")
        || !topic
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '%' | '.'))
}

/// Groups Riffle itself uses to read without committing.
fn is_system_group(group: &str) -> bool {
    group == READER_GROUP || group.starts_with("CID_RMQ_SYS_") || group == "TOOLS_CONSUMER"
}
