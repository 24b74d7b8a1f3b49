//! Our own detectors, for what a rule set written for source files misses in notes and
//! commands: secrets assigned to a secret-sounding name in `=`, `:` or JSON form (JSON inside
//! a JSON string too, its quotes escaped to any depth), the AWS secret access key after its
//! name and Azure connection-string keys (gitleaks has no rule for either), credentials in
//! URLs, `Authorization:` headers and bearer tokens, private key blocks cut short, passwords in
//! credential files and on command lines (`~/.pgpass`, `.netrc`, `mysql -pSECRET`, `sshpass -p
//! SECRET`) and password hashes (htpasswd, crypt), and prefix-shaped tokens (formats as
//! gitleaks' rules give them) at lengths or in places its rules do not accept: glued to an
//! identifier (`my_AKIA...`, `id_ghp_...`), followed by punctuation (a DigitalOcean or Vault
//! token before `.`, `:`, `,` or `)`), without the name gitleaks wants before it (a Telegram
//! bot token), or holding one of its stopwords (gitleaks skips a Hugging Face or SendGrid key
//! that holds `abcdefghijklmnopqrstuvwxyz`). What a value has to look like to be taken for a
//! secret is [`values`](super::values)'.
//!
//! A token's edges are checked per detector: a token may touch `_` or punctuation, and a
//! letter when its prefix cannot end a word (`AKIA` after a lowercase letter, `ghp_`), but
//! never more of its own alphabet (`XAKIA...`, `AKIA...9` are longer runs, not keys), and
//! `sk-`, `sk_live_` never follow a word (`risk-`, `desk_live_`).

use std::ops::Range;
use std::sync::LazyLock;
use std::sync::OnceLock;

use aho_corasick::AhoCorasick;
use regex::Regex;

use super::gitleaks::shannon_entropy;
use super::values::BENIGN_NAME;
use super::values::is_passphrase;
use super::values::is_placeholder;
use super::values::is_random;
use super::values::is_secret_value;
use super::values::is_template_or_mask;

/// A finding of one of our detectors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleMatch {
    /// The kind of secret.
    pub kind: &'static str,
    /// Where the secret is (char boundaries).
    pub range: Range<usize>,
    /// Whether it is the generic assignment detector (a weaker claim than a named shape).
    pub generic: bool,
}

/// How a detector's candidate is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// A shape specific enough to trust as it is (templates and masks aside).
    Shape,
    /// A value after a secret-sounding name: the full set of value checks.
    Assignment,
    /// The credential of an `Authorization:` header: trusted after a scheme word, judged as an
    /// assignment without one.
    Header,
    /// A shape whose random part (the `body` group, else the secret) must look random: two of
    /// digits, lowercase and uppercase letters, and not only hex digits. An identifier
    /// (`pk_test_integrationsuite`) or a commit hash in a secret's place is not one.
    Random,
    /// A value put where only a password goes (`mysql -pSECRET`, `sshpass -p SECRET`): trusted
    /// unless it is a template, a mask or a placeholder.
    Password,
}

/// What may touch a token on either side. The regex crate has no look-around, so a token's
/// edges are checked after the match instead of with `\b`, which refused a key glued to an
/// identifier (`my_AKIA...`, `id_ghp_...`, `AKIA..._suffix`): that is how keys sit in variable
/// names, file names and the messages that quote them.
#[derive(Debug, Clone, Copy)]
struct Edges {
    /// A character that may not come right before the token.
    before: fn(char) -> bool,
    /// A character that may not come right after it: one of its own alphabet (the token
    /// would be longer than its format allows).
    after: fn(char) -> bool,
}

impl Edges {
    /// No edge checks: the pattern anchors itself.
    const FREE: Edges = Edges {
        before: never,
        after: never,
    };

    /// Whether the token at `range` in `text` stands on its own.
    fn hold(self, text: &str, range: &Range<usize>) -> bool {
        let before = text[..range.start].chars().next_back();
        let after = text[range.end..].chars().next();
        !before.is_some_and(self.before) && !after.is_some_and(self.after)
    }
}

fn never(_: char) -> bool {
    false
}

fn is_alnum(c: char) -> bool {
    c.is_ascii_alphanumeric()
}

fn is_upper_or_digit(c: char) -> bool {
    c.is_ascii_uppercase() || c.is_ascii_digit()
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

fn is_url_safe(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

fn is_base64(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '+' || c == '/' || c == '='
}

/// A character of a crypt hash but `.` (a full stop after one is read as the end of a
/// sentence).
fn is_crypt(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '/'
}

struct Detector {
    kind: &'static str,
    /// Lowercase words one of which the text must hold for the pattern to run.
    keywords: &'static [&'static str],
    pattern: &'static str,
    /// Compiled the first time a text holds one of the keywords: most texts hold none, and
    /// compiling every pattern would cost a write more than the rest of its checks.
    compiled: OnceLock<Regex>,
    check: Check,
    edges: Edges,
}

impl Detector {
    fn regex(&self) -> &Regex {
        self.compiled
            .get_or_init(|| Regex::new(self.pattern).expect("secret patterns are valid"))
    }
}

/// A value as written after its name or flag: double- or single-quoted, each quote escaped to
/// any depth (`\"...\"` in a JSON string, `\\\"...\\\"` in a JSON string inside one),
/// or bare. A quoted value ends at the first quote, however many backslashes precede it.
macro_rules! value {
    () => {
        r#"(?:\\*"(?P<dq>[^"\r\n]{0,512}?)\\*"|\\*'(?P<sq>[^'\r\n]{0,512}?)\\*'|(?P<bare>[^\s"'`,;()\[\]{}<>]{1,512}))"#
    };
}

static DETECTORS: LazyLock<Vec<Detector>> = LazyLock::new(|| {
    let detector = |kind, keywords, pattern, check| Detector {
        kind,
        keywords,
        pattern,
        compiled: OnceLock::new(),
        check,
        edges: Edges::FREE,
    };
    // A token: trusted by its shape, standing on its own by `edges`.
    let token = |kind, keywords, pattern, before, after| Detector {
        edges: Edges { before, after },
        ..detector(kind, keywords, pattern, Check::Shape)
    };
    vec![
        detector(
            "private_key",
            &["private key"],
            r"(?P<secret>-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z))",
            Check::Shape,
        ),
        detector(
            "url_credentials",
            &["://"],
            r#"(?i)\b[a-z][a-z0-9+.-]{1,30}://[^\s:@/?#"'<>]{0,256}:(?P<secret>[^\s@/?#"'<>]{1,256})@[^\s@]"#,
            Check::Shape,
        ),
        detector(
            "authorization_header",
            &["authorization"],
            r#"(?i)\b(?:proxy-)?authorization\b\\*["']?[ \t]*[:=][ \t]*\\*["']?[ \t]*(?:(?P<scheme>basic|bearer|token|digest|negotiate|ntlm|api-?key)[ \t]+)?(?P<secret>[A-Za-z0-9._~+/=:-]{6,})"#,
            Check::Header,
        ),
        detector(
            "bearer_token",
            &["bearer"],
            r"(?i)\bbearer[ \t]+(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)",
            Check::Shape,
        ),
        detector(
            "secret_assignment",
            &[
                "passw",
                "passphrase",
                "pwd",
                "secret",
                "token",
                "credential",
                "key",
            ],
            concat!(
                r#"(?i)(?P<name>[A-Za-z0-9_.$-]*(?:passw(?:or)?d|passphrase|pwd|secret|token|credential|[_.-]key|apikey|(?-i:[a-z0-9]Key))[A-Za-z0-9_.-]*)\\*["']?[ \t]*(?::=|=>|=|:)[ \t]*"#,
                value!()
            ),
            Check::Assignment,
        ),
        detector(
            "secret_assignment",
            &["--"],
            concat!(
                r#"(?i)--(?P<name>password|passwd|passphrase|token|secret|api-?key|auth-token|access-token|client-secret)(?:=|[ \t]+)"#,
                value!()
            ),
            Check::Assignment,
        ),
        // The secret half of an AWS key pair: 40 base64 characters after its name, in the
        // credentials file (`aws_secret_access_key = ...`), the environment
        // (`AWS_SECRET_ACCESS_KEY=...`), `aws configure set` and JSON (`"SecretAccessKey"`).
        // AWS's own documentation example (`wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY`) is
        // redacted too, as its access key id is.
        token(
            "aws_secret_access_key",
            &[
                "secret_access",
                "secret-access",
                "secret.access",
                "secretaccess",
                "aws_secret",
                "aws-secret",
                "aws.secret",
                "awssecret",
            ],
            r#"(?i)(?:secret[_.-]?access[_.-]?key|aws[_.-]?secret[_.-]?key)\\*["']?(?:[ \t]*(?::=|=>|=|:)[ \t]*|[ \t]+)\\*["']?(?P<secret>[A-Za-z0-9/+]{40})"#,
            never,
            is_base64,
        ),
        // The secret half of an AWS key pair without its name, after its access key id on the
        // same line: the `credentials.csv` the console hands out
        // (`deploy,,AKIA...,wJalr...`), `aws configure list`, notes pasting both.
        Detector {
            check: Check::Random,
            ..token(
                "aws_secret_access_key",
                &["akia", "asia"],
                r"(?:AKIA|ASIA)[0-9A-Z]{16}[^\r\n]{0,100}?[^A-Za-z0-9/+=](?P<secret>[A-Za-z0-9/+]{40})",
                never,
                is_base64,
            )
        },
        // A password on a command line: `curl -u user:password` (also `--user`,
        // `--proxy-user`), judged as an assigned value.
        detector(
            "secret_assignment",
            &["-u", "--user", "--proxy-user"],
            r#"(?:^|[\s"'])(?:-u|--user|--proxy-user)(?:[ \t]+|=)["']?[^\s:"'@`]{1,128}:(?P<bare>[^\s"'`]{1,256})"#,
            Check::Assignment,
        ),
        // A PostgreSQL password file line (`~/.pgpass`): `host:port:database:user:password`,
        // five fields (a `:` inside one is escaped), the host a name or an IPv4 address, the
        // port a number, the database and the user names (each may be `*`); the password
        // judged as an assigned value. A time (`23:15:00-00:44:30`), a list of numbers or a
        // `grep -n` hit in a colon-separated file (`users.txt:1:root:x:0:0:...`) is no such
        // line.
        detector(
            "pgpass_password",
            &[":"],
            r#"(?m)(?:^|[^A-Za-z0-9.*:_\\/-])(?:\*|[A-Za-z][A-Za-z0-9.-]*|[0-9]{1,3}(?:\.[0-9]{1,3}){3}):(?:\*|[0-9]{1,5})(?::(?:\*|[A-Za-z_](?:[^\s:\\]|\\.)*)){2}:(?P<bare>(?:[^\s:\\"'`]|\\.){1,256})(?:[\s"'`]|$)"#,
            Check::Assignment,
        ),
        // A `.netrc` entry: `machine HOST login USER password SECRET`, on one line or over
        // several, or `default ... password SECRET`; judged as an assigned value.
        detector(
            "netrc_password",
            &["machine", "default"],
            r#"\b(?:machine[ \t]+\S+|default)(?:\s+(?:login\s+(?P<login>\S+)|(?:account|port)\s+\S+)){0,3}\s+password\s+(?:"(?P<dq>[^"\r\n]{1,256})"|(?P<bare>[^\s"'`]{1,256}))"#,
            Check::Assignment,
        ),
        // The MySQL and MariaDB clients take the password glued to `-p` (`mysql -uroot
        // -pSECRET db`); `-p` alone, or followed by a space, asks for it instead, and what
        // follows is the database.
        detector(
            "command_line_password",
            &["mysql", "mariadb"],
            r#"\b(?:mysql[a-z]*|mariadb[a-z-]*)\b[^\n|;&]{0,200}?[ \t]-p(?:"(?P<dq>[^"\r\n]{1,256})"|'(?P<sq>[^'\r\n]{1,256})'|(?P<bare>[^\s"'`]{1,256}))"#,
            Check::Password,
        ),
        // `sshpass -p SECRET` (or `-pSECRET`), after any of sshpass' own options.
        detector(
            "command_line_password",
            &["sshpass"],
            r#"\bsshpass(?:[ \t]+-(?:[fdP][ \t]*\S+|[evhV]))*[ \t]+-p[ \t]*(?:"(?P<dq>[^"\r\n]{1,256})"|'(?P<sq>[^'\r\n]{1,256})'|(?P<bare>[^\s"'`]{1,256}))"#,
            Check::Password,
        ),
        // A password hash as `htpasswd` writes it (Apache MD5 `$apr1$`, bcrypt `$2y$`, SHA-1
        // `{SHA}`, salted `{SSHA}`), and the crypt hashes of `/etc/shadow` (`$1$`, `$5$`,
        // `$6$`): a hash can be cracked offline, so it is kept like the password. A hash may
        // end in `.`, so a `.` after one is taken for a full stop.
        token(
            "password_hash",
            &[
                "$apr1$", "$2a$", "$2b$", "$2x$", "$2y$", "{sha}", "{ssha}", "$1$", "$5$", "$6$",
            ],
            r"(?P<secret>\$apr1\$[./0-9A-Za-z]{1,8}\$[./0-9A-Za-z]{22}|\$2[abxy]\$[0-9]{2}\$[./0-9A-Za-z]{53}|\{SHA\}[A-Za-z0-9+/]{27}=|\{SSHA\}[A-Za-z0-9+/]{26,}={0,2}|\$[156]\$(?:rounds=[0-9]{1,9}\$)?[./0-9A-Za-z]{1,16}\$[./0-9A-Za-z]{22,86})",
            is_alnum,
            is_crypt,
        ),
        // The key of an Azure connection string (storage `AccountKey=`, Service Bus, Event
        // Hubs and IoT Hub `SharedAccessKey=`).
        detector(
            "azure_access_key",
            &["accountkey", "sharedaccesskey"],
            r"(?i)(?:AccountKey|SharedAccessKey)[ \t]*=[ \t]*(?P<secret>[A-Za-z0-9+/]{20,}={0,2})",
            Check::Shape,
        ),
        token(
            "aws_access_key",
            &[
                "akia", "asia", "agpa", "aida", "aroa", "anpa", "abia", "acca", "a3t",
            ],
            r"(?P<secret>(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ABIA|ACCA|A3T[A-Z0-9])[0-9A-Z]{16})",
            is_upper_or_digit,
            is_upper_or_digit,
        ),
        token(
            "github_token",
            &["gh", "github_pat_"],
            r"(?P<secret>gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})",
            never,
            is_alnum,
        ),
        token(
            "slack_token",
            &["xox"],
            r"(?P<secret>xox[abposre]-[A-Za-z0-9-]{10,})",
            is_alnum,
            never,
        ),
        token(
            "google_api_key",
            &["aiza"],
            r"(?P<secret>AIza[0-9A-Za-z_-]{35})",
            is_alnum,
            is_url_safe,
        ),
        // `sk-` and `sk_live_` end ordinary words (`risk-`, `desk_live_`): nothing of a word
        // may come before them.
        token(
            "openai_api_key",
            &["sk-"],
            r"(?P<secret>sk-(?:proj-|ant-|svcacct-|admin-)?[A-Za-z0-9_-]{20,})",
            is_word,
            never,
        ),
        // Stripe keys: 24 or more random letters and digits after the prefix. An identifier
        // that starts the same way goes on with `_` (`pk_test_integration_suite`) or is not
        // random (`sk_live_streamingconfiguration`).
        Detector {
            check: Check::Random,
            ..token(
                "stripe_access_token",
                &["_live_", "_test_", "_prod_"],
                r"(?P<secret>(?:sk|rk|pk)_(?:live|test|prod)_(?P<body>[A-Za-z0-9]{16,}))",
                is_word,
                is_word,
            )
        },
        token(
            "npm_access_token",
            &["npm_"],
            r"(?P<secret>npm_[A-Za-z0-9]{30,})",
            is_alnum,
            never,
        ),
        // Hugging Face user and organization tokens: 34 letters after the prefix.
        token(
            "huggingface_token",
            &["hf_", "api_org_"],
            r"(?P<secret>(?:hf|api_org)_[A-Za-z]{34})",
            is_alnum,
            is_alnum,
        ),
        // SendGrid: `SG.`, a 22-character key id, `.`, a 43-character secret.
        token(
            "sendgrid_api_key",
            &["sg."],
            r"(?P<secret>SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})",
            is_alnum,
            is_url_safe,
        ),
        // A Telegram bot token on its own: the bot's id, `:`, and 35 characters starting with
        // `A` (gitleaks finds one only after a name holding `telegr`).
        Detector {
            check: Check::Random,
            ..token(
                "telegram_bot_api_token",
                &[":a"],
                r"(?P<secret>[0-9]{5,16}:(?P<body>A[A-Za-z0-9_-]{34}))",
                is_alnum,
                is_url_safe,
            )
        },
        // DigitalOcean personal, OAuth and refresh tokens and HashiCorp Vault service, batch
        // and recovery tokens. gitleaks' rules for them refuse a token followed by `.`, `:`,
        // `,` or `)`, as a token is in a sentence or a list; here only more of the token's
        // own alphabet ends it.
        token(
            "digitalocean_token",
            &["dop_v1_", "doo_v1_", "dor_v1_"],
            r"(?P<secret>do[opr]_v1_[a-f0-9]{64})",
            is_alnum,
            is_alnum,
        ),
        Detector {
            check: Check::Random,
            ..token(
                "vault_token",
                &["hvs.", "hvb.", "hvr."],
                r"(?P<secret>hv[sbr]\.(?P<body>[A-Za-z0-9_-]{24,}))",
                is_alnum,
                is_url_safe,
            )
        },
        token(
            "jwt",
            &["ey"],
            r"(?P<secret>eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)",
            is_alnum,
            never,
        ),
    ]
});

/// Every detector keyword in one Aho-Corasick automaton, and each detector's keywords as
/// indexes into it: one pass over a text finds which detectors may match, instead of a search
/// per keyword per detector.
static KEYWORDS: LazyLock<(AhoCorasick, Vec<Vec<usize>>)> = LazyLock::new(|| {
    let mut words: Vec<&'static str> = Vec::new();
    let keywords_of = DETECTORS
        .iter()
        .map(|detector| {
            (detector.keywords.iter())
                .map(|word| match words.iter().position(|known| known == word) {
                    Some(at) => at,
                    None => {
                        words.push(word);
                        words.len() - 1
                    }
                })
                .collect()
        })
        .collect();
    let prefilter = AhoCorasick::builder()
        .match_kind(aho_corasick::MatchKind::Standard)
        .build(&words)
        .expect("the detector keywords build an automaton");
    (prefilter, keywords_of)
});

/// Where the secret of an assignment is, when its value looks like one: not after a name that
/// holds none (`token_count`, `tokenUrl`), not the name again (`token: token`), not code (a
/// reference `&token`, a macro `Token![`), and never past the end of a query-string
/// parameter (`access_token=...&scope=user` keeps `&scope=user`).
fn judge_assignment(text: &str, captures: &regex::Captures<'_>) -> Option<Range<usize>> {
    let name = captures.name("name").map_or("", |name| name.as_str());
    // An anonymous FTP login's password is an address by convention (`.netrc`'s `default login
    // anonymous password user@site`).
    let anonymous = (captures.name("login"))
        .is_some_and(|login| ["anonymous", "ftp"].contains(&login.as_str()));
    if BENIGN_NAME.is_match(name) || anonymous {
        return None;
    }
    let (value, quoted) = value_of(captures)?;
    let mut range = value.range();
    if !quoted && let Some(next) = QUERY_PARAMETER.find(value.as_str()) {
        range.end = range.start + next.start();
    }
    let value = &text[range.clone()];
    let macro_call = !quoted
        && value.ends_with('!')
        && text[range.end..].trim_start().starts_with(['[', '(', '{']);
    let password_name = ["passw", "passphrase", "pwd"]
        .iter()
        .any(|word| name.to_ascii_lowercase().contains(word));
    let secret = value.trim() != name
        && !macro_call
        && (is_secret_value(value, quoted) || (quoted && password_name && is_passphrase(value)));
    secret.then_some(range)
}

/// The value a detector captured (`dq`, `sq` or `bare`), and whether it was quoted.
fn value_of<'t>(captures: &regex::Captures<'t>) -> Option<(regex::Match<'t>, bool)> {
    match (
        captures.name("dq").or_else(|| captures.name("sq")),
        captures.name("bare"),
    ) {
        (Some(value), _) => Some((value, true)),
        (None, bare) => Some((bare?, false)),
    }
}

/// The next parameter of a query string inside a value: `&name=`.
static QUERY_PARAMETER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"&[A-Za-z_][A-Za-z0-9_.-]*=").expect("valid"));

/// Every secret our detectors find in `text`; `lowered` is `text` lowercased.
pub fn find(text: &str, lowered: &str) -> Vec<RuleMatch> {
    let (prefilter, keywords_of) = &*KEYWORDS;
    let mut seen = vec![false; prefilter.patterns_len()];
    for hit in prefilter.find_overlapping_iter(lowered) {
        seen[hit.pattern().as_usize()] = true;
    }
    let mut found = Vec::new();
    for (detector, keywords) in DETECTORS.iter().zip(keywords_of) {
        if !keywords.iter().any(|keyword| seen[*keyword]) {
            continue;
        }
        for captures in detector.regex().captures_iter(text) {
            let judged = match detector.check {
                Check::Shape => captures
                    .name("secret")
                    .filter(|secret| !is_template_or_mask(secret.as_str()))
                    .map(|secret| secret.range()),
                Check::Random => captures
                    .name("secret")
                    .filter(|secret| {
                        let body = captures.name("body").unwrap_or(*secret);
                        !is_template_or_mask(secret.as_str()) && is_random(body.as_str())
                    })
                    .map(|secret| secret.range()),
                Check::Header => captures
                    .name("secret")
                    .filter(|secret| {
                        if captures.name("scheme").is_some() {
                            !is_template_or_mask(secret.as_str())
                        } else {
                            is_secret_value(secret.as_str(), false)
                                && shannon_entropy(secret.as_str()) >= 3.0
                        }
                    })
                    .map(|secret| secret.range()),
                Check::Assignment => judge_assignment(text, &captures),
                Check::Password => value_of(&captures)
                    .map(|(value, _)| value)
                    .filter(|value| {
                        !is_template_or_mask(value.as_str()) && !is_placeholder(value.as_str())
                    })
                    .map(|value| value.range()),
            };
            if let Some(range) = judged.filter(|range| detector.edges.hold(text, range)) {
                found.push(RuleMatch {
                    kind: detector.kind,
                    range,
                    generic: detector.check == Check::Assignment,
                });
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets(text: &str) -> Vec<(&'static str, &str)> {
        find(text, &text.to_lowercase())
            .into_iter()
            .map(|m| (m.kind, &text[m.range]))
            .collect()
    }

    #[test]
    fn every_detector_compiles() {
        for detector in DETECTORS.iter() {
            assert!(
                Regex::new(detector.pattern).is_ok(),
                "{} does not compile",
                detector.kind
            );
        }
    }

    #[test]
    fn assignments_in_every_form() {
        for (text, secret) in [
            ("DB_PASSWORD=Xk9mP2vL8qRz", "Xk9mP2vL8qRz"),
            (
                "aws_secret_access_key = wJalrXUtnFEMIK7MDENGbPxRfiCY",
                "wJalrXUtnFEMIK7MDENGbPxRfiCY",
            ),
            (r#"{"password": "hunter2hunter2"}"#, "hunter2hunter2"),
            ("api_key: 'q8W3eR5tY7uI'", "q8W3eR5tY7uI"),
            (
                "//registry.npmjs.org/:_authToken=a1b2c3d4e5f6g7h8",
                "a1b2c3d4e5f6g7h8",
            ),
            ("mysql --password=Tr0ub4dor3 db", "Tr0ub4dor3"),
            ("client_secret := \"9f8e7d6c5b4a\"", "9f8e7d6c5b4a"),
        ] {
            let found = secrets(text);
            assert!(found.iter().any(|(_, s)| *s == secret), "{text}: {found:?}");
        }
    }

    #[test]
    fn prose_identifiers_and_placeholders_are_not_secrets() {
        for text in [
            "password: see vault",
            "password: \"see the vault\"",
            "token_count: 12345678",
            "max_tokens = 4096",
            "let api_key = config.api_key;",
            "secret_key = os.environ[\"SECRET_KEY\"]",
            "token = get_token()",
            "DB_PASSWORD=${DB_PASSWORD}",
            "password: <your password>",
            "password = \"changeme\"",
            "password: ********",
            "public_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5",
            "the tokenizer: wordpiece",
            "use crate::policy::secrets::redactions;",
            "if token == expected_token_value {",
            "Authorization: required",
            "bearer of bad news",
            "postgres://localhost:5432/db",
            "postgres://user:${PASS}@host/db",
        ] {
            assert!(secrets(text).is_empty(), "{text}: {:?}", secrets(text));
        }
    }

    #[test]
    fn the_usual_spellings_of_common_credentials() {
        const AWS_SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
        for text in [
            format!("aws_secret_access_key = {AWS_SECRET}"),
            format!("AWS_SECRET_ACCESS_KEY={AWS_SECRET}"),
            format!("export AWS_SECRET_ACCESS_KEY=\"{AWS_SECRET}\""),
            format!("{{\"SecretAccessKey\": \"{AWS_SECRET}\"}}"),
            format!("aws configure set aws_secret_access_key {AWS_SECRET}"),
        ] {
            assert_eq!(
                secrets(&text),
                vec![("aws_secret_access_key", AWS_SECRET)],
                "{text}"
            );
        }
        for (text, kind, secret) in [
            (
                "PASSWORD: \"correct horse battery staple\"",
                "secret_assignment",
                "correct horse battery staple",
            ),
            (
                r#"{"db_password": "Blue Whale Sings 42"}"#,
                "secret_assignment",
                "Blue Whale Sings 42",
            ),
            (
                "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZab==;EndpointSuffix=core.windows.net",
                "azure_access_key",
                "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZab==",
            ),
            (
                "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=root;SharedAccessKey=Qm9vbXRvd25CYXNlNjRLZXlWYWx1ZQ=",
                "azure_access_key",
                "Qm9vbXRvd25CYXNlNjRLZXlWYWx1ZQ=",
            ),
            (
                "HF_TOKEN hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
                "huggingface_token",
                "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
            ),
            (
                "key SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG end",
                "sendgrid_api_key",
                "SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG",
            ),
        ] {
            let found = secrets(text);
            assert!(found.contains(&(kind, secret)), "{text}: {found:?}");
        }
    }

    #[test]
    fn tokens_glued_to_identifiers_are_found() {
        for (text, kind, secret) in [
            (
                "my_AKIAIOSFODNN7EXAMPLE",
                "aws_access_key",
                "AKIAIOSFODNN7EXAMPLE",
            ),
            (
                "xAKIAIOSFODNN7EXAMPLE",
                "aws_access_key",
                "AKIAIOSFODNN7EXAMPLE",
            ),
            (
                "AKIAIOSFODNN7EXAMPLE_suffix",
                "aws_access_key",
                "AKIAIOSFODNN7EXAMPLE",
            ),
            (
                "unknown patch field `my_AKIAIOSFODNN7EXAMPLE`",
                "aws_access_key",
                "AKIAIOSFODNN7EXAMPLE",
            ),
            (
                "id_ghp_1234567890abcdefghijklmnopqrstuvwxyzAB",
                "github_token",
                "ghp_1234567890abcdefghijklmnopqrstuvwxyzAB",
            ),
            (
                "tokenghp_1234567890abcdefghijklmnopqrstuvwxyzAB",
                "github_token",
                "ghp_1234567890abcdefghijklmnopqrstuvwxyzAB",
            ),
            (
                "SLACK_xoxb-9551858317-1008989723213-l1ks7RgLdi8RDeWguzDBGwBn",
                "slack_token",
                "xoxb-9551858317-1008989723213-l1ks7RgLdi8RDeWguzDBGwBn",
            ),
            (
                "key_AIzauzX9k1gnneGEYG1_LwiqD9jJBAciI05Fhfw",
                "google_api_key",
                "AIzauzX9k1gnneGEYG1_LwiqD9jJBAciI05Fhfw",
            ),
            (
                "token_hf_abcdefghijklmnopqrstuvwxyzABCDEFGH.txt",
                "huggingface_token",
                "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
            ),
        ] {
            let found = secrets(text);
            assert!(found.contains(&(kind, secret)), "{text}: {found:?}");
        }
    }

    #[test]
    fn identifiers_around_token_prefixes_are_not_secrets() {
        for text in [
            // A longer run of the key's own alphabet is not a key.
            "XAKIAIOSFODNN7EXAMPLE",
            "AKIAIOSFODNN7EXAMPLE9",
            "BACKUP_AKIAIOSFODNN7EXAMPLEXYZ_FILE",
            "AKIA_PREFIX_LENGTH = 4",
            // Prefixes that end ordinary words.
            "risk-assessment-for-the-quarterly-report",
            "see the task-scheduler-background-jobs crate",
            "run_pk_test_integration_suite",
            "desk_live_streaming_configuration",
            // Prefixes inside words, and too short to be a token.
            "from huggingface_hub import hf_hub_download",
            "graph_hf_loader_for_all_the_models_in_one",
            "laughs_and_more_laughs_with_friends_here",
            "SG.settings.load()",
            "ghp_short",
            "npm_config_registry",
            // Prose after a password's name, quoted.
            "password: \"see the vault\"",
            "password: \"stored in 1Password\"",
            "DB_PASSWORD: \"not set\"",
            "password: \"Hello\"",
            "password: \"Your Password Here\"",
            // Not an AWS secret key: too short, or a reference to one.
            "aws_secret_access_key = ${AWS_SECRET_ACCESS_KEY}",
            "AWS_SECRET_ACCESS_KEY: required",
            "AccountKey=<key>",
        ] {
            assert!(secrets(text).is_empty(), "{text}: {:?}", secrets(text));
        }
    }

    #[test]
    fn urls_headers_and_bearers() {
        assert_eq!(
            secrets("postgres://user:pass@db.internal:5432/app"),
            vec![("url_credentials", "pass")]
        );
        assert_eq!(
            secrets("Authorization: Basic dXNlcjpwYXNzd29yZA=="),
            vec![("authorization_header", "dXNlcjpwYXNzd29yZA==")]
        );
        let bearer = secrets("-H 'Authorization: Bearer abcdefghijklmnop0123456789'");
        assert!(bearer.contains(&("authorization_header", "abcdefghijklmnop0123456789")));
        assert!(bearer.contains(&("bearer_token", "abcdefghijklmnop0123456789")));
    }

    /// Issue 48: JSON inside a JSON string, escaped once or deeper, holds its assignments too.
    #[test]
    fn escaped_json_assignments_are_found_at_any_depth() {
        for (text, secret) in [
            (r#"{\"password\":\"hunter2hunter2\"}"#, "hunter2hunter2"),
            (
                r#"{\\\"token\\\": \\\"Xk9mP2vL8qRzW3\\\"}"#,
                "Xk9mP2vL8qRzW3",
            ),
            (
                r#"{\\\\\\\"apiKey\\\\\\\":\\\\\\\"Zx7Qm2Lp9Vw4\\\\\\\"}"#,
                "Zx7Qm2Lp9Vw4",
            ),
            (
                r#"body: "{\"db_password\": \"Blue Whale Sings 42\"}""#,
                "Blue Whale Sings 42",
            ),
            (r#"{\'secret\': \'q8W3eR5tY7uI\'}"#, "q8W3eR5tY7uI"),
            (r#"run --password=\"Tr0ub4dor3\" now"#, "Tr0ub4dor3"),
            (
                r#"{\"SecretAccessKey\": \"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\"}"#,
                "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            ),
        ] {
            let found = secrets(text);
            assert!(found.iter().any(|(_, s)| *s == secret), "{text}: {found:?}");
        }
        for text in [
            r#"{\"password\": \"see the vault\"}"#,
            r#"{\"token_count\": \"12345678\"}"#,
            r#"{\"api_key\": \"${API_KEY}\"}"#,
            r#"{\\\"password\\\": \\\"changeme\\\"}"#,
            r#"let s = "{\"token\": \"\"}";"#,
        ] {
            assert!(secrets(text).is_empty(), "{text}: {:?}", secrets(text));
        }
    }

    /// Issue 48: credential files and command lines that carry a password in their own form.
    #[test]
    fn credential_files_and_command_lines() {
        for (text, kind, secret) in [
            (
                "db.example.com:5432:app:deploy:S3cr3tPassw0rd",
                "pgpass_password",
                "S3cr3tPassw0rd",
            ),
            (
                "*:*:*:postgres:Xk9mP2vL8qRz",
                "pgpass_password",
                "Xk9mP2vL8qRz",
            ),
            (
                "localhost:5432:*:app:Wq9Er4Ty7\\:Ui2",
                "pgpass_password",
                "Wq9Er4Ty7\\:Ui2",
            ),
            (
                "echo '10.0.0.5:5432:app:ops:hunter2hunter2' >> ~/.pgpass",
                "pgpass_password",
                "hunter2hunter2",
            ),
            (
                "there is no subgoal \"db.example.com:5432:app:deploy:S3cr3tPassw0rd\"",
                "pgpass_password",
                "S3cr3tPassw0rd",
            ),
            (
                "mysql -uroot -pS3cr3tPassw0rd app",
                "command_line_password",
                "S3cr3tPassw0rd",
            ),
            (
                "mysqldump -h db -u app -p'Xk9m P2vL' shop > dump.sql",
                "command_line_password",
                "Xk9m P2vL",
            ),
            (
                "mariadb -pSecretPass",
                "command_line_password",
                "SecretPass",
            ),
            (
                "sshpass -p Zq8vN3xL5pW ssh deploy@host",
                "command_line_password",
                "Zq8vN3xL5pW",
            ),
            (
                "sshpass -v -pZq8vN3xL5pW scp a host:b",
                "command_line_password",
                "Zq8vN3xL5pW",
            ),
            (
                "machine api.example.com login deploy password Zq8vN3xL5pW",
                "netrc_password",
                "Zq8vN3xL5pW",
            ),
            (
                "machine git.internal\n  login ci\n  password 9f8e7d6c5b4aZ\n",
                "netrc_password",
                "9f8e7d6c5b4aZ",
            ),
            (
                "no subgoal \"machine h.example login u password Zq8vN3xL5pW\"",
                "netrc_password",
                "Zq8vN3xL5pW",
            ),
            (
                "admin:$apr1$Xk9mP2vL$Q8wZ3nR5tY7uI1oE5aS0d.",
                "password_hash",
                "$apr1$Xk9mP2vL$Q8wZ3nR5tY7uI1oE5aS0d.",
            ),
            (
                "deploy:$2y$05$abcdefghijklmnopqrstuuN7JzGpXxEJAr3LvTBk8mI1H0Vo/Cw9e",
                "password_hash",
                "$2y$05$abcdefghijklmnopqrstuuN7JzGpXxEJAr3LvTBk8mI1H0Vo/Cw9e",
            ),
            (
                "ops:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=",
                "password_hash",
                "{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=",
            ),
            (
                "root:$6$Kq8vB3nX$wJalrXUtnFEMIK7MDENGbPxRfiCYzZ0123456789abcdefgh:19000:0:99999:7:::",
                "password_hash",
                "$6$Kq8vB3nX$wJalrXUtnFEMIK7MDENGbPxRfiCYzZ0123456789abcdefgh",
            ),
        ] {
            let found = secrets(text);
            assert!(found.contains(&(kind, secret)), "{text}: {found:?}");
        }
        for text in [
            // `-p` alone or before a space asks for the password; the next word is the database.
            "mysql -u root -p app",
            "mysql -h db -P 3306 -p",
            "mysql -p\"$MYSQL_PASSWORD\" app",
            "mkdir -p build && ssh -p2222 host",
            "docker run -p8080:80 nginx",
            "sshpass -f ~/.pass ssh host",
            "sshpass -e ssh -p 22 host",
            // Colon-separated shapes that are no password file line.
            "localhost:5432:app",
            "db.example.com:5432:app:deploy",
            "src/main.rs:12:5: error: unused variable",
            "main.rs:12:5:10:20",
            "00:1a:2b:3c:4d:5e",
            "12:30:45:67:89",
            "localhost:5432:mydb:postgres:postgres",
            "\"1968-02-01T23:15:00-00:44:30[Africa/Monrovia]\".parse()?;",
            "format!(\"3:4:\\n5:7:\\n6:8:\\n\\nbyte count:{}\\n\", n);",
            "TimeZone::parse(b\"XXX24:59:59YYY25:59:59,M3.2.0,M11.1.0\")",
            "default login anonymous password user@site",
            "users.txt:1:root:x:0:0:root:/root:/bin/bash",
            "*:*:*:postgres:${PGPASSWORD}",
            "x:db.example.com:5432:app:deploy:Xk9mP2vL8qRz",
            // Prose around the netrc and hash words.
            "the machine learning login page password reset",
            "by default password prompts are shown",
            "bcrypt hashes start with $2y$ and a cost",
            "the {SHA} prefix marks a SHA-1 hash",
            "echo $1$2 and $6$HOME",
        ] {
            assert!(secrets(text).is_empty(), "{text}: {:?}", secrets(text));
        }
    }

    /// Issue 48: tokens followed by the punctuation of a sentence or a list, and Telegram bot
    /// tokens without a name before them.
    #[test]
    fn tokens_before_punctuation_and_bare_bot_tokens() {
        let digitalocean =
            "dop_v1_4f8e2a9c1b7d3e5f6a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f";
        let vault = "hvs.CAESIJk8mP2vL8qRzW3nB5tY7uI1oE5aS0dF";
        let telegram = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0";
        for (token, kind) in [
            (digitalocean, "digitalocean_token"),
            (&digitalocean.replace("dop_", "doo_"), "digitalocean_token"),
            (&digitalocean.replace("dop_", "dor_"), "digitalocean_token"),
            (vault, "vault_token"),
            (&vault.replace("hvs.", "hvb."), "vault_token"),
            (&vault.replace("hvs.", "hvr."), "vault_token"),
            (telegram, "telegram_bot_api_token"),
        ] {
            for text in [
                token.to_string(),
                format!("use {token}."),
                format!("{token}: revoked"),
                format!("[{token}, other]"),
                format!("(token {token})"),
                format!("VAULT_TOKEN={token}"),
            ] {
                let found = secrets(&text);
                assert!(found.contains(&(kind, token)), "{text}: {found:?}");
            }
        }
        for text in [
            // Longer runs of the alphabet, and words holding the prefix.
            "dop_v1_4f8e2a9c1b7d3e5f6a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f0",
            "dop_v1_4f8e2a9c",
            "xhvs.CAESIJk8mP2vL8qRzW3nB5tY7uI1oE5",
            "chvs.flag_of_the_vault_service_tokens",
            "hvs.configuration_of_the_vault_server",
            "hvs.short",
            // Ids before a colon that are no bot token.
            "12345:abcdefghijklmnopqrstuvwxyzabcdefghi",
            "1234567890123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0",
            "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0x",
            "line 123456:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        ] {
            assert!(secrets(text).is_empty(), "{text}: {:?}", secrets(text));
        }
    }
}
