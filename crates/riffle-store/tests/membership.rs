//! Consumer-group membership with real processes: three members share eight units, one is
//! killed with SIGKILL, and the survivors take over its units within seconds; a fourth
//! member joining later gets a share too.
//!
//! The members are this test executable re-run with `--exact member_child_entry` and
//! environment variables naming the data directory and the member id.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use riffle_store::membership::{self, Membership};
use riffle_store::{Store, StoreOptions};

const DIR_ENV: &str = "RIFFLE_STORE_TEST_MEMBER_DIR";
const ID_ENV: &str = "RIFFLE_STORE_TEST_MEMBER_ID";
const UNITS: u32 = 8;

fn options() -> StoreOptions {
    StoreOptions {
        maintenance_interval: None,
        ..StoreOptions::default()
    }
}

/// Child entry: joins the group and prints `ASSIGN id generation members units` whenever its
/// assignment's generation changes, for up to a minute (the parent kills it earlier).
#[test]
fn member_child_entry() {
    let Ok(dir) = std::env::var(DIR_ENV) else {
        return;
    };
    let id = std::env::var(ID_ENV).unwrap();
    let store = Store::open(&dir, options()).unwrap();
    let member = Membership::join(&store, "job", &id).unwrap();
    let units: Vec<u32> = (0..UNITS).collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut generation = None;
    while Instant::now() < deadline {
        let a = member.assignment(&units).unwrap();
        if generation != Some(a.generation) {
            generation = Some(a.generation);
            let units: Vec<String> = a.units.iter().map(u32::to_string).collect();
            println!(
                "ASSIGN {id} {} {} {}",
                a.generation,
                a.members.join("+"),
                if units.is_empty() {
                    "-".to_string()
                } else {
                    units.join(",")
                }
            );
        }
        member
            .wait_for_change(a.generation, Duration::from_secs(1))
            .unwrap();
    }
}

/// The latest assignment a member reported.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Reported {
    generation: u64,
    members: Vec<String>,
    units: Vec<u32>,
}

fn spawn_member(dir: &std::path::Path, id: &str, tx: mpsc::Sender<(String, Reported)>) -> Child {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "member_child_entry",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(DIR_ENV, dir)
        .env(ID_ENV, id)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let Some(pos) = line.find("ASSIGN ") else {
                continue;
            };
            let f: Vec<&str> = line[pos + 7..].split_whitespace().collect();
            let [id, generation, members, units] = f[..] else {
                continue;
            };
            let reported = Reported {
                generation: generation.parse().unwrap(),
                members: members.split('+').map(str::to_owned).collect(),
                units: units
                    .split(',')
                    .filter(|u| *u != "-")
                    .map(|u| u.parse().unwrap())
                    .collect(),
            };
            if tx.send((id.to_owned(), reported)).is_err() {
                break;
            }
        }
    });
    child
}

/// Waits until every member in `live` reports the same generation over exactly `live`, with
/// shares that cover every unit exactly once; returns how long that took.
fn wait_for_cover(
    rx: &mpsc::Receiver<(String, Reported)>,
    latest: &mut BTreeMap<String, Reported>,
    live: &[&str],
) -> Duration {
    let start = Instant::now();
    let live_ids: Vec<String> = live.iter().map(|s| s.to_string()).collect();
    loop {
        while let Ok((id, r)) = rx.try_recv() {
            latest.insert(id, r);
        }
        let reports: Vec<&Reported> = live_ids.iter().filter_map(|id| latest.get(id)).collect();
        if reports.len() == live.len() {
            let generation = reports[0].generation;
            let agreed = reports
                .iter()
                .all(|r| r.generation == generation && r.members == live_ids);
            if agreed {
                let mut units: Vec<u32> = reports.iter().flat_map(|r| r.units.clone()).collect();
                units.sort();
                assert_eq!(
                    units,
                    (0..UNITS).collect::<Vec<_>>(),
                    "shares at generation {generation} must cover every unit once: {latest:?}"
                );
                return start.elapsed();
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no agreement among {live:?} within 10 s: {latest:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn members_rebalance_when_one_is_killed_and_another_joins() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), options()).unwrap();
    let (tx, rx) = mpsc::channel();
    let mut children = BTreeMap::new();
    for id in ["m0", "m1", "m2"] {
        children.insert(id, spawn_member(dir.path(), id, tx.clone()));
    }
    let mut latest = BTreeMap::new();
    wait_for_cover(&rx, &mut latest, &["m0", "m1", "m2"]);
    let ids: BTreeSet<String> = membership::members(&store, "job")
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(ids.len(), 3, "{ids:?}");

    let mut victim = children.remove("m1").unwrap();
    victim.kill().unwrap(); // SIGKILL
    victim.wait().unwrap();
    let took = wait_for_cover(&rx, &mut latest, &["m0", "m2"]);
    eprintln!("rebalance after kill -9 took {took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");

    children.insert("m3", spawn_member(dir.path(), "m3", tx.clone()));
    let took = wait_for_cover(&rx, &mut latest, &["m0", "m2", "m3"]);
    eprintln!("rebalance after a join took {took:?}");

    for (_, mut child) in children {
        child.kill().unwrap();
        child.wait().unwrap();
    }
    // The dead members are noticed by whoever looks next.
    assert!(membership::members(&store, "job").unwrap().is_empty());
}
