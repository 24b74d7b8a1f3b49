//! `init`, `update`, `show`: the store and its one write path.

use serde_json::json;

use crate::common::TestEnv;

#[test]
fn init_creates_the_store_at_the_work_tree_root_once() {
    let env = TestEnv::bare();
    env.write("sub/dir/file.txt", "x");
    let first = env.run(&["-C", "sub/dir", "init"]);
    insta::assert_snapshot!(first, @r"
    created [ROOT]/.epiphany at revision 0
    [exit status: 0]
    ");
    assert!(env.root().join(".epiphany/state.msgpack").is_file());
    assert!(env.root().join(".epiphany/rollout.jsonl").is_file());
    let gitignore = String::from_utf8(env.read(".epiphany/.gitignore")).expect("utf8");
    assert!(gitignore.contains("cache/"), "{gitignore}");
    let second = env.json(&["init"]);
    assert_eq!(
        second,
        json!({"root": "[ROOT]", "revision": 0, "created": false})
    );
}

#[test]
fn update_applies_a_patch_and_show_prints_it() {
    let env = TestEnv::new();
    let report = env.update(&json!({"objective": "ship the store"}));
    assert_eq!(report["revision"], 1);
    assert_eq!(report["changed_fields"], json!(["objective"]));
    assert_eq!(
        env.json(&["show"]),
        json!({"revision": 1, "objective": "ship the store"})
    );
}
