//! The process boundary: parse the command line ([`Cli`]), build the one [`Ctx`] of this
//! process, run the command, and map its outcome to an exit code in exactly one place.

use std::process::ExitCode;

use clap::Parser;

use crate::cmd::Cli;
use crate::cmd::is_flag_name;
use crate::ctx::Ctx;
use crate::ctx::Status;
use crate::ctx::report_failure;
use crate::error::Failure;
use crate::policy::secrets::conceal_values;
use crate::ui::Ui;

/// Runs the command line and returns the process exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) if !err.use_stderr() => {
            // `--help` and `--version`.
            let _ = err.print();
            return ExitCode::SUCCESS;
        }
        Err(err) => {
            let argv: Vec<String> = std::env::args_os()
                .skip(1)
                .map(|arg| arg.to_string_lossy().into_owned())
                .collect();
            if wants_json(argv.iter()) {
                return report_error(&Ui::new(true, false), &usage_failure(&err, &argv).into());
            }
            let text = concealed(&err.render().to_string(), &argv);
            let _ = std::io::Write::write_all(&mut std::io::stderr(), text.as_bytes());
            return ExitCode::from(2);
        }
    };
    let json = cli.json;
    let ctx = match Ctx::from_env(cli.directory.as_deref(), json, cli.quiet) {
        Ok(ctx) => ctx,
        Err(err) => return report_error(&Ui::new(json, cli.quiet), &err),
    };
    match crate::cmd::run(&ctx, &cli.command) {
        Ok(Status::Ok) => ExitCode::SUCCESS,
        Ok(Status::No) => ExitCode::from(1),
        Err(err) => report_error(&ctx.ui, &err),
    }
}

/// Whether `--json` is among the arguments (before any `--`), so that even an argument the
/// parser refuses is reported as the JSON error document scripts expect.
fn wants_json<S: AsRef<str>>(args: impl Iterator<Item = S>) -> bool {
    args.map_while(|arg| (arg.as_ref() != "--").then(|| arg.as_ref() == "--json"))
        .any(|json| json)
}

/// A parse error's text without the values typed in `argv` ([`conceal_values`]): flags and
/// command names are shown, what was given for them is not.
fn concealed(text: &str, argv: &[String]) -> String {
    let commands = command_names(&<Cli as clap::CommandFactory>::command());
    conceal_values(text, argv.iter().map(String::as_str), |arg| {
        is_flag_name(arg) || commands.iter().any(|name| name == arg)
    })
}

/// The names of every subcommand of `command`, at any depth.
fn command_names(command: &clap::Command) -> Vec<String> {
    command
        .get_subcommands()
        .flat_map(|sub| {
            let mut names = command_names(sub);
            names.push(sub.get_name().to_owned());
            names
        })
        .collect()
}

/// A command-line parsing error as a usage failure: clap's first line is the message, its
/// `tip:` (or the `--help` pointer) the hint. Nothing typed in `argv` is repeated but the
/// names of flags and commands.
fn usage_failure(err: &clap::Error, argv: &[String]) -> Failure {
    let text = concealed(&err.render().to_string(), argv);
    let mut lines = text.lines().map(str::trim);
    let first = lines
        .by_ref()
        .find(|line| !line.is_empty())
        .unwrap_or("invalid command line");
    let mut message = first.strip_prefix("error: ").unwrap_or(first).to_owned();
    // "the following required arguments were not provided:" lists them on the next lines.
    if message.ends_with(':') {
        let listed: Vec<&str> = lines.by_ref().take_while(|line| !line.is_empty()).collect();
        message = format!("{} {}", message, listed.join(", "));
    }
    let hint = lines
        .find_map(|line| line.strip_prefix("tip: "))
        .map_or_else(
            || "see `epiphany --help`, or `epiphany COMMAND --help`".to_owned(),
            str::to_owned,
        );
    Failure::usage(message).with_hint(hint)
}

fn report_error(ui: &Ui, err: &anyhow::Error) -> ExitCode {
    ExitCode::from(report_failure(ui, err))
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn verify_cli() {
        Cli::command().debug_assert();
    }

    #[test]
    fn usage_errors_never_repeat_a_value() {
        let token = "ghp_1234567890abcdefghijklmnopqrstuvwxyzAB";
        for argv in [
            vec!["update", "--expected-revision", token],
            vec!["update", &format!("--expected-revision={token}")],
            vec!["scene", token],
            vec!["log", "--limit", "hunter2-is-my-password"],
            vec![
                "update",
                "--turn-id",
                "-----BEGIN PRIVATE KEY-----\nMIIEv\n-----END PRIVATE KEY-----",
            ],
        ] {
            let full: Vec<&str> = std::iter::once("epiphany")
                .chain(argv.iter().copied())
                .collect();
            let err = Cli::try_parse_from(full.clone()).expect_err("refused");
            let argv: Vec<String> = argv.iter().map(|arg| (*arg).to_owned()).collect();
            let failure = usage_failure(&err, &argv);
            let shown = format!("{} {:?}", failure.message, failure.hint);
            let plain = concealed(&err.render().to_string(), &argv);
            for text in [&shown, &plain] {
                assert!(!text.contains(token), "{text}");
                assert!(
                    !text.contains("hunter2") && !text.contains("MIIEv"),
                    "{text}"
                );
            }
        }
        assert!(is_flag_name("--expected-revision") && is_flag_name("-C"));
        assert!(!is_flag_name("-----BEGIN") && !is_flag_name("--") && !is_flag_name("value"));
    }

    #[test]
    fn json_is_seen_before_the_end_of_options_only() {
        let args = |list: &[&str]| {
            list.iter()
                .map(|arg| (*arg).to_owned())
                .collect::<Vec<_>>()
                .into_iter()
        };
        assert!(wants_json(args(&["scene", "--json", "--bogus"])));
        assert!(!wants_json(args(&["distill", "--", "--json"])));
        assert!(!wants_json(args(&["scene", "--jsonx"])));
    }

    #[test]
    fn parse_errors_become_usage_failures_with_a_hint() {
        let err = Cli::try_parse_from(["epiphany", "scene", "--bogus"]).expect_err("bogus");
        let failure = usage_failure(&err, &["scene".to_owned(), "--bogus".to_owned()]);
        assert_eq!(failure.kind, crate::error::ErrorKind::Usage);
        assert!(failure.message.contains("--bogus"), "{}", failure.message);
        assert!(!failure.message.starts_with("error:"));
        assert!(failure.hint.is_some());
    }
}
