//! Issue 10, "the map never lies": code references are checked when written, claims are
//! re-checked mechanically, every view tells the same truth, promotion settles what it
//! verified, and the command line keeps its contract.
// See: issue 10 ("The map never lies")

use serde_json::json;

use crate::common::TestEnv;

#[test]
fn regression_10_json_usage_errors_are_json_documents() {
    let env = TestEnv::new();
    for (args, needle) in [
        (&["--json", "scene", "--bogus"][..], "--bogus"),
        (
            &["--json", "distill", "--status", "ok", "--source-kind"],
            "--source-kind",
        ),
        (&["--json", "pressure", "--used", "many"], "many"),
        (&["--json", "graph", "--direction", "sideways"], "sideways"),
        (&["--json", "distill", "--status", "ok"], "--source-kind"),
        (&["--json", "frobnicate"], "frobnicate"),
        (&["--json", "prompt", "--max-chars", "10"], "10"),
        (&["scene", "--json", "--depth", "2"], "--depth"),
    ] {
        let output = env.run(args);
        assert_eq!(output.code, 2, "{args:?}:\n{output}");
        let document = output.json();
        assert_eq!(document["error"]["kind"], "usage", "{args:?}:\n{output}");
        let message = document["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(needle), "{args:?}: {message}");
        assert!(!message.starts_with("error:"), "{message}");
        assert!(document["error"]["hint"].is_string(), "{document}");
        assert!(output.stderr.contains("error:"), "{output}");
    }
    // Help is not an error, with or without `--json`.
    let help = env.run(&["--json", "scene", "--help"]);
    assert_eq!(help.code, 0, "{help}");
    assert!(help.stdout.contains("Usage:"), "{help}");
    // Without `--json`, clap's own message.
    let plain = env.run(&["scene", "--bogus"]);
    assert_eq!((plain.code, plain.stdout.as_str()), (2, ""), "{plain}");
}

#[test]
fn regression_10_text_may_begin_with_a_dash() {
    let env = TestEnv::new();
    let draft = env.json(&[
        "distill",
        "--source-kind",
        "note",
        "--status",
        "ok",
        "--text",
        "-5 apples, then --more",
    ]);
    assert_eq!(
        draft["patch"]["observations"][0]["summary"],
        "-5 apples, then --more"
    );
}

#[test]
fn regression_10_diff_takes_head_style_names() {
    let env = TestEnv::new();
    for objective in ["one", "two", "three"] {
        env.update(&json!({"objective": objective}));
    }
    let numbered = env.json(&["diff", "1", "3"]);
    assert_eq!(env.json(&["diff", "HEAD~2", "HEAD"]), numbered);
    assert_eq!(env.json(&["diff", "HEAD^^", "@"]), numbered);
    let last = env.json(&["diff", "HEAD^"]);
    assert_eq!(
        (last["from"].clone(), last["to"].clone()),
        (json!(2), json!(3))
    );
    let bad = env.run(&["--json", "diff", "HEAD~9"]);
    assert_eq!(bad.code, 2, "{bad}");
    assert_eq!(bad.json()["error"]["kind"], "usage");
    assert!(
        bad.json()["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("the head is revision 3")),
        "{bad}"
    );
}
