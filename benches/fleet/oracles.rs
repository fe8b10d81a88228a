//! The external oracles' tables, each model's published figure or formula beside retry's own
//! breaker and budget in the same model: Brooker 2022 (`brooker2022.rs`), his metastable
//! collapse (`collapse.rs`) and gRPC's retry throttling (`grpc.rs`).

use std::time::Duration;

use retry::policy::shared::KeyRules;

use crate::brooker2022::{self, Strategy};
use crate::collapse::{self, Client, Load};
use crate::grpc::{self, Throttle};
use crate::keyed::Scope;

/// Runs averaged per cell (his simulators average 10).
const RUNS: u64 = 10;

fn settings(args: &[&str]) -> Result<KeyRules, String> {
    let p = retry::setup::from_flags(&[&["--key", "oracle"], args].concat())?;
    p.state.map(|s| s.rules).ok_or_else(|| "no key".into())
}

/// Brooker 2022: load amplification (calls / unique requests) against the failure rate.
pub fn print_brooker2022() -> Result<(), String> {
    let budget = settings(&["--breaker-failures", "0"])?;
    let breaker = settings(&["--budget-burst", "0"])?;
    let both = settings(&[])?;
    let retry = |s: &KeyRules, scope| Strategy::Retry {
        settings: s.clone(),
        scope,
        retries: 3,
    };
    let strategies: Vec<(&str, Strategy)> = vec![
        ("his 3 retries", Strategy::Retries(3)),
        (
            "his bucket",
            Strategy::Bucket {
                fill: 0.1,
                size: 5.0,
            },
        ),
        (
            "his breaker",
            Strategy::Breaker {
                rate: 0.1,
                retries: 3,
            },
        ),
        ("budget/client", retry(&budget, Scope::PerClient)),
        ("budget shared", retry(&budget, Scope::Shared)),
        ("breaker/client", retry(&breaker, Scope::PerClient)),
        ("breaker shared", retry(&breaker, Scope::Shared)),
        ("both shared", retry(&both, Scope::Shared)),
    ];
    println!(
        "Oracle: Brooker 2022, token buckets and circuit breakers: 100 clients x 10 calls/s for 10 s, \
         failure rate f, 3 retries without backoff; means over {RUNS} runs"
    );
    println!(
        "  amplification = calls / unique requests (ok: share of requests that succeeded; refused: by retry's breaker)"
    );
    println!(
        "  his figures: (1 - f^4)/(1 - f) for 3 retries (1.875 at f 0.5, 4 at f 1); his bucket ~1.14 and breaker ~1.0 at f 1"
    );
    print!("  {:>5} {:>9}", "f", "formula");
    for (name, _) in &strategies {
        print!(" {name:>16}");
    }
    println!();
    for f in [0.0, 0.1, 0.2, 0.5, 1.0] {
        let world = brooker2022::World {
            clients: 100,
            rate: 10.0,
            failure: f,
            duration: Duration::from_secs(10),
            seed: 0,
        };
        print!("  {f:>5.2} {:>9.3}", brooker2022::three_retries(f));
        for (_, s) in &strategies {
            let (amp, ok, refused) = brooker2022::mean(s, &world, 0..RUNS);
            let cell = if refused > 0.0005 {
                format!("{amp:.3} r{:.0}%", refused * 100.0)
            } else {
                format!("{amp:.3} ok{:.0}%", ok * 100.0)
            };
            print!(" {cell:>16}");
        }
        println!();
    }
    println!("  the client count, at f 0.5 and 100 calls/s in all:");
    for clients in [10usize, 100, 1000] {
        let world = brooker2022::World {
            clients,
            rate: 100.0 / clients as f64,
            failure: 0.5,
            duration: Duration::from_secs(10),
            seed: 0,
        };
        let cells: Vec<String> = [
            ("his bucket", &strategies[1].1),
            ("budget/client", &strategies[3].1),
            ("budget shared", &strategies[4].1),
        ]
        .iter()
        .map(|(name, s)| {
            let (amp, _, _) = brooker2022::mean(s, &world, 0..RUNS);
            format!("{name} {amp:.3}")
        })
        .collect();
        println!("    {clients:>5} clients: {}", cells.join(", "));
    }
    Ok(())
}

/// Brooker's metastable collapse: does the server come back after the trigger?
pub fn print_collapse() -> Result<(), String> {
    let client = |args: &[&str]| -> Result<Client, String> {
        let p =
            retry::setup::from_flags(&[&["-n", "3", "--attempt-timeout", "3s"], args].concat())?;
        Ok(Client::Retry {
            backoff: p.backoff.clone(),
            key: p.state.map(|s| s.rules),
        })
    };
    let key = ["--key", "api"];
    let clients: Vec<(&str, Client)> = vec![
        (
            "no backoff (-d 0)",
            client(&["-d", "0", "--jitter", "none"])?,
        ),
        ("his, backoff+jitter", Client::Brooker),
        (
            "retry -d 20s (his delays)",
            client(&["-d", "20s", "--max-delay", "1m"])?,
        ),
        ("retry, default delays", client(&[])?),
        (
            "+ shared budget",
            client(&[&key[..], &["--breaker-failures", "0"]].concat())?,
        ),
        (
            "+ shared breaker",
            client(&[&key[..], &["--budget-burst", "0"]].concat())?,
        ),
        ("+ both (defaults)", client(&key)?),
        (
            "+ both, open 5s",
            client(&[&key[..], &["--breaker-open", "5s"]].concat())?,
        ),
        (
            "-d 0 + shared budget",
            client(&[&key[..], &["-d", "0", "--breaker-failures", "0"]].concat())?,
        ),
    ];
    println!(
        "Oracle: Brooker's metastable collapse: 3 s timeout, 3 attempts, latency 1 s + 0.01 s x concurrency; \
         {RUNS} runs of {} s",
        collapse::HORIZON_S
    );
    println!(
        "  his finding: without backoff no recovery after the spike; with backoff and jitter it recovers; on the ramp both collapse"
    );
    println!(
        "  amp: attempts / requests; goodput: successes/s after the trigger ends; back: s after it until every later 10 s answer 85% of their requests"
    );
    println!(
        "  {:<28} {:>6} {:>9} {:>13}   {:>6} {:>9} {:>13}",
        "client", "amp", "goodput", "back (runs)", "amp", "goodput", "back (runs)"
    );
    println!(
        "  {:<28} {:^31}   {:^31}",
        "", "spike 40 -> 80/s, 20-25 s", "ramp 40 -> 80 -> 40/s, 0-50 s"
    );
    for (name, c) in &clients {
        print!("  {name:<28}");
        for load in [Load::Spike, Load::Ramp] {
            let runs: Vec<collapse::Report> =
                (0..RUNS).map(|seed| collapse::run(load, c, seed)).collect();
            let from = load.trigger_end();
            let n = runs.len() as f64;
            let amp = runs
                .iter()
                .map(collapse::Report::amplification)
                .sum::<f64>()
                / n;
            let goodput = runs.iter().map(|r| r.goodput(from)).sum::<f64>() / n;
            let back: Vec<u64> = runs.iter().filter_map(|r| r.recovered(from)).collect();
            let back = if back.is_empty() {
                format!("never (0/{})", runs.len())
            } else {
                format!(
                    "{:.0} s ({}/{})",
                    back.iter().sum::<u64>() as f64 / back.len() as f64,
                    back.len(),
                    runs.len()
                )
            };
            print!(" {amp:>6.2} {goodput:>9.1} {back:>13}  ");
        }
        println!();
    }
    Ok(())
}

/// gRPC's retry throttling beside retry's budget.
pub fn print_grpc() -> Result<(), String> {
    let budget = settings(&["--breaker-failures", "0"])?;
    let t = Throttle::A6;
    println!(
        "Oracle: gRPC retry throttling (A6): maxTokens {}, tokenRatio {}; retry's budget: --budget-burst 10 --budget-ratio 0.1 --budget-refill 1m",
        t.max_tokens, t.ratio
    );
    println!(
        "  from a full bucket, every call failing: gRPC retries {} times (A6: exactly 4), retry's budget {} times",
        grpc::grpc(t, 100, 5, 1.0, 0).made,
        grpc::retry(&budget, 100, 5, 1.0, 0, 0).made
    );
    println!(
        "  long run, calls of 4 attempts at 100/s, 20,000 calls: share of wanted retries made (A6: throttled past {:.2}% failures)",
        t.threshold() * 100.0
    );
    println!("  {:>9} {:>8} {:>8}", "failures", "gRPC", "retry");
    for f in [0.02, 0.05, 0.08, 0.09, 0.1, 0.12, 0.15, 0.2, 0.5] {
        let g = grpc::grpc(t, 20_000, 4, f, 0);
        let r = grpc::retry(&budget, 20_000, 4, f, 10_000_000, 0);
        println!(
            "  {:>8.0}% {:>7.1}% {:>7.1}%",
            f * 100.0,
            g.share() * 100.0,
            r.share() * 100.0
        );
    }
    Ok(())
}
