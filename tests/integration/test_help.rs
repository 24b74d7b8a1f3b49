//! The help text is part of the contract a user reads: every command's `--help`, nested ones
//! included, is a snapshot, so a changed flag or description shows up in review.

use clap::CommandFactory;

use crate::common::TestEnv;

/// Every command path below the top level, parents before children (`["hooks"]`,
/// `["hooks", "install"]`, ...), taken from the parser itself so no command is forgotten.
fn command_paths() -> Vec<Vec<String>> {
    fn walk(command: &clap::Command, prefix: &[String], out: &mut Vec<Vec<String>>) {
        for sub in command.get_subcommands() {
            let mut path = prefix.to_vec();
            path.push(sub.get_name().to_owned());
            out.push(path.clone());
            walk(sub, &path, out);
        }
    }
    let mut out = Vec::new();
    walk(&epiphany::cmd::Cli::command(), &[], &mut out);
    out
}

#[test]
fn every_command_has_a_help_snapshot() {
    let env = TestEnv::plain();
    let top = env.ok(&["--help"]);
    insta::assert_snapshot!("help", top.stdout);
    let paths = command_paths();
    assert!(
        paths.len() > 20,
        "the parser lists too few commands: {paths:?}"
    );
    for path in paths {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let output = env.ok(&args);
        let usage = format!("Usage: epiphany {}", path.join(" "));
        assert!(
            output.stdout.contains(&usage),
            "`{}` is not the help of its own command:\n{output}",
            args.join(" ")
        );
        insta::assert_snapshot!(format!("help_{}", path.join("_")), output.stdout);
    }
}

/// Every environment variable the binary reads is named in the top-level help (issue 50: the
/// help omitted `EPIPHANY_MODEL`). The names are found in the sources, where the context reads
/// them.
#[test]
fn the_help_names_every_variable_the_binary_reads() {
    let context = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/ctx.rs"))
        .expect("src/ctx.rs");
    let read: Vec<&str> = (context.split('"'))
        .filter(|piece| piece.starts_with("EPIPHANY_") && piece.len() > "EPIPHANY_".len())
        .filter(|piece| piece.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'))
        .collect();
    assert!(read.len() >= 4, "{read:?}");
    let help = TestEnv::plain().ok(&["--help"]).stdout;
    for name in read {
        assert!(
            help.contains(name),
            "`--help` does not name {name}:\n{help}"
        );
    }
}
