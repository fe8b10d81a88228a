//! The store as companies run it: a Redis Cluster (`redis+cluster://`), and a master behind
//! sentinels (`redis-sentinel://`) that fail over. The state suite's scenarios run through
//! both; then what only they have: keys on different nodes, and a failover.

use super::*;
use crate::support::redis::{Cluster, Sentinels};

macro_rules! on_cluster {
    ($($name:ident),* $(,)?) => {
        mod cluster_scenarios {
            use super::*;
            $(
                #[test]
                fn $name() {
                    let Some(cluster) = Cluster::start() else { return };
                    keyed::$name(&Setup::cluster(&cluster));
                }
            )*
        }
    };
}

keyed::scenarios!(on_cluster);

/// Keys whose hashes are on different nodes each get one breaker, shared by runs that reach
/// the cluster through different nodes; --list-keys scans every master.
#[test]
fn keys_on_different_nodes_share_their_breakers_from_any_node() {
    let Some(cluster) = Cluster::start() else {
        return;
    };
    // Three keys, on three different nodes.
    let mut keys: Vec<String> = Vec::new();
    let mut holders = Vec::new();
    for n in 0.. {
        let key = format!("api-{n}");
        let port = cluster.holder(&format!("retry:{key}")).port;
        if !holders.contains(&port) {
            holders.push(port);
            keys.push(key);
        }
        if keys.len() == 3 {
            break;
        }
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let run = |key: &str, through: usize, code: i32| {
        let url = format!(
            "redis+cluster://retry:{PASSWORD}@127.0.0.1:{}",
            cluster.nodes[through].port
        );
        let mut c = support::retry();
        c.env_remove("RETRY_STATE_URL")
            .args(["--state", &url, "--state-dir"])
            .arg(dir.path())
            .args(["--key", key, "--breaker-failures", "2", "-n", "1", "--"])
            .args(["sh", "-c", &format!("exit {code}")]);
        output(c)
    };
    for key in &keys {
        // Two failures, through two different nodes, open the key's breaker.
        assert_eq!(run(key, 0, 1).status.code(), Some(1));
        let second = run(key, 1, 1);
        assert_eq!(second.status.code(), Some(1), "{}", stderr(&second));
        assert!(!stderr(&second).contains("warning"), "{}", stderr(&second));
        let refused = run(key, 2, 0);
        assert_eq!(
            refused.status.code(),
            Some(75),
            "{key}: {}",
            stderr(&refused)
        );
    }
    let mut c = support::retry();
    c.env_remove("RETRY_STATE_URL").args([
        "--state",
        &cluster.url(),
        "--list-keys",
        "--log-format",
        "json",
    ]);
    let out = output(c);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listed: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    let mut names: Vec<&str> = listed.iter().filter_map(|l| l["key"].as_str()).collect();
    names.sort();
    let mut want: Vec<&str> = keys.iter().map(String::as_str).collect();
    want.sort();
    assert_eq!(names, want);
    assert!(listed.iter().all(|l| l["breaker"] == "open"), "{listed:?}");
}

/// The master dies in the middle of a run's life; the sentinels promote the replica, and the
/// next runs find the new master through the same URL and share one breaker there.
#[test]
fn after_a_failover_the_next_runs_share_one_breaker_on_the_new_master() {
    let Some(mut set) = Sentinels::start() else {
        return;
    };
    let s = Setup::sentinel(&set);
    let first = set.master.port;
    assert_eq!(
        s.run(&with(&breaker("1h"), &["-n", "3"]), 1).status.code(),
        Some(1)
    );
    assert_eq!(s.run(&breaker("1h"), 0).status.code(), Some(75));
    drop(s);
    set.master.kill();
    let started = Instant::now();
    while set.master_port() == Some(first) {
        assert!(started.elapsed() < Duration::from_secs(30), "no failover");
        thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(set.master_port(), Some(set.replica.port));
    let s = Setup::sentinel(&set);
    // The new master holds what was replicated before the failover, or nothing: start the key
    // afresh there, then open its breaker again.
    let reset = output(s.retry(&["--key", "api", "--reset-state"]));
    assert_eq!(reset.status.code(), Some(0), "{}", stderr(&reset));
    let failed = s.run(&with(&breaker("1h"), &["-n", "3"]), 1);
    assert_eq!(failed.status.code(), Some(1));
    assert!(!stderr(&failed).contains("warning"), "{}", stderr(&failed));
    let refused = s.run(&breaker("1h"), 0);
    assert_eq!(refused.status.code(), Some(75), "{}", stderr(&refused));
    assert!(s.stored("api"), "the state is on the new master");
}
