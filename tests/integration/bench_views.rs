//! Whole-process timings of the projections an agent host calls on every turn, on a large
//! state: 10,000 observations, 10,000 evidence records and a 2,000-node graph whose nodes
//! cite files in a git repository with changes since the state was written.
//!
//! A benchmark, not a timed test: it is ignored by default and prints medians. Run with
//! `cargo test --release --test integration bench_views -- --ignored --nocapture`.

use std::time::Duration;
use std::time::Instant;

use serde_json::Value;
use serde_json::json;

use crate::common::TestEnv;

const RUNS: usize = 21;

fn median(env: &TestEnv, args: &[&str]) -> Duration {
    let mut times: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let started = Instant::now();
            let output = env.run(args);
            let elapsed = started.elapsed();
            assert!(output.code <= 1, "epiphany {args:?} failed:\n{output}");
            elapsed
        })
        .collect();
    times.sort();
    times[RUNS / 2]
}

#[test]
#[ignore = "benchmark; run with --release -- --ignored --nocapture"]
#[allow(clippy::print_stdout)] // a benchmark reports its medians
fn bench_views() {
    let env = TestEnv::new();
    for i in 0..200 {
        env.write(&format!("src/m{i}.rs"), format!("// module {i}\n"));
    }
    env.commit_all("code");
    let nodes: Vec<Value> = (0..2000)
        .map(|i| json!({"id": format!("n{i}"), "title": format!("node {i}"), "purpose": "a mapped component", "code_refs": [{"path": format!("src/m{}.rs", i % 200), "start_line": 1, "end_line": 9}]}))
        .collect();
    let edges: Vec<Value> = (1..2000)
        .map(|i| json!({"id": format!("e{i}"), "source_id": format!("n{}", i - 1), "target_id": format!("n{i}"), "kind": "calls"}))
        .collect();
    let observations: Vec<Value> = (0..10_000)
        .map(|i| json!({"id": format!("obs-{i}"), "summary": format!("observation {i} about a seam"), "source_kind": "test", "status": "ok", "evidence_ids": [format!("ev-{i}")], "code_refs": [{"path": format!("src/m{}.rs", i % 200)}]}))
        .collect();
    let evidence: Vec<Value> = (0..10_000)
        .map(|i| json!({"id": format!("ev-{i}"), "kind": "test", "status": "pass", "summary": format!("evidence {i}")}))
        .collect();
    env.update(&json!({
        "objective": "measure the projections",
        "graphs": {"architecture": {"nodes": nodes, "edges": edges}},
        "graph_frontier": {"active_node_ids": ["n0", "n1"]},
        "investigation_checkpoint": {"checkpoint_id": "ck", "kind": "bench", "disposition": "resume_ready", "focus": "speed", "next_action": "measure", "code_refs": [{"path": "src/m0.rs"}]},
        "observations": observations,
        "evidence": evidence
    }));
    // The foundation benchmark's last write: one more observation.
    env.update(&json!({
        "observations": [{"id": "obs-last", "summary": "one more", "source_kind": "test", "status": "ok", "evidence_ids": ["ev-last"]}],
        "evidence": [{"id": "ev-last", "kind": "test", "status": "pass", "summary": "one more"}]
    }));
    env.commit_all("state");
    for i in 0..10 {
        env.write(&format!("src/m{i}.rs"), "// changed\n");
    }
    env.commit_all("change ten cited files");
    env.write("src/m20.rs", "// uncommitted\n");

    for args in [
        &["scene"][..],
        &["prompt"],
        &["freshness"],
        &["reorient"],
        &["--json", "freshness"],
    ] {
        println!(
            "epiphany {:<18} median {:?}",
            args.join(" "),
            median(&env, args)
        );
    }
}
