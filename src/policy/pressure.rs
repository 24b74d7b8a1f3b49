//! Context pressure (docs/projections.md#pressure): how full the agent's context window is, from
//! token counts the caller supplies, and whether it is time to checkpoint before compaction.
//!
//! Owns the thresholds and the basis rules. Cumulative spend is never read as current pressure:
//! only the last turn's size counts. Takes plain numbers; reads no telemetry itself.

use serde::Serialize;

/// From this ratio (per mille of the limit) the level is `elevated`.
pub const ELEVATED_PER_MILLE: i64 = 650;
/// From this ratio the level is `high` and compaction should be prepared.
pub const PREPARE_COMPACTION_PER_MILLE: i64 = 800;
/// From this ratio the level is `critical`.
pub const CRITICAL_PER_MILLE: i64 = 950;

/// Token counts reported by the agent host.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Telemetry {
    /// Tokens spent over the whole session (cumulative).
    pub total_tokens: i64,
    /// Size of the last turn: what the context holds now.
    pub last_turn_tokens: i64,
    /// The model's context window.
    pub model_context_window: Option<i64>,
    /// The host's auto-compaction threshold.
    pub model_auto_compact_token_limit: Option<i64>,
}

/// Whether a pressure reading could be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PressureStatus {
    /// Not enough telemetry.
    Unknown,
    /// A reading was made.
    Ready,
}

/// How full the context is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PressureLevel {
    /// Not enough telemetry.
    Unknown,
    /// Below 65 %.
    Low,
    /// From 65 %.
    Elevated,
    /// From 80 %: prepare compaction.
    High,
    /// From 95 %.
    Critical,
}

impl PressureLevel {
    /// The snake_case name, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            PressureLevel::Unknown => "unknown",
            PressureLevel::Low => "low",
            PressureLevel::Elevated => "elevated",
            PressureLevel::High => "high",
            PressureLevel::Critical => "critical",
        }
    }

    /// `high` or `critical`.
    pub fn is_high(self) -> bool {
        self >= PressureLevel::High
    }
}

/// Which limit the ratio is taken against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PressureBasis {
    /// No usable limit.
    Unknown,
    /// The host's auto-compaction threshold (preferred).
    AutoCompactLimit,
    /// The model's context window.
    ModelContextWindow,
}

/// The pressure reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pressure {
    /// Whether a reading was made.
    pub status: PressureStatus,
    /// How full the context is.
    pub level: PressureLevel,
    /// Which limit the ratio is against.
    pub basis: PressureBasis,
    /// Tokens the context holds now.
    pub used_tokens: Option<i64>,
    /// The model's context window, as given.
    pub model_context_window: Option<i64>,
    /// The auto-compaction threshold, as given.
    pub model_auto_compact_token_limit: Option<i64>,
    /// Tokens left before the limit (negative past it).
    pub remaining_tokens: Option<i64>,
    /// `used × 1000 / limit`, rounded down.
    pub ratio_per_mille: Option<i64>,
    /// Time to write a checkpoint before the host compacts.
    pub should_prepare_compaction: bool,
    /// What the reading means.
    pub note: String,
}

/// Reads the pressure from the telemetry, if any.
pub fn assess_pressure(telemetry: Option<&Telemetry>) -> Pressure {
    let unknown = Pressure {
        status: PressureStatus::Unknown,
        level: PressureLevel::Unknown,
        basis: PressureBasis::Unknown,
        used_tokens: None,
        model_context_window: telemetry.and_then(|t| t.model_context_window),
        model_auto_compact_token_limit: telemetry.and_then(|t| t.model_auto_compact_token_limit),
        remaining_tokens: None,
        ratio_per_mille: None,
        should_prepare_compaction: false,
        note: String::new(),
    };
    let Some(telemetry) = telemetry else {
        return Pressure {
            note: "no token telemetry; pass the tokens in context now (`--used N`) and a limit (`--auto-compact-limit N` or `--context-window N`)".to_owned(),
            ..unknown
        };
    };
    let used = telemetry.last_turn_tokens.max(0);
    if used == 0 && telemetry.total_tokens > 0 {
        return Pressure {
            note: format!(
                "only cumulative spend is known ({} tokens); it is never read as current pressure",
                telemetry.total_tokens
            ),
            ..unknown
        };
    }
    let positive = |limit: Option<i64>| limit.filter(|limit| *limit > 0);
    let (basis, limit, limit_name) = if let Some(limit) =
        positive(telemetry.model_auto_compact_token_limit)
    {
        (PressureBasis::AutoCompactLimit, limit, "auto-compact limit")
    } else if let Some(limit) = positive(telemetry.model_context_window) {
        (PressureBasis::ModelContextWindow, limit, "context window")
    } else {
        return Pressure {
            used_tokens: Some(used),
            note: format!(
                "{used} tokens in context, but no positive auto-compact limit or context window is known"
            ),
            ..unknown
        };
    };
    // Wide enough for any two counts: `used × 1000` of a large count does not fit an i64.
    let ratio = i64::try_from(i128::from(used) * 1000 / i128::from(limit)).unwrap_or(i64::MAX);
    let remaining = limit - used;
    let level = match ratio {
        r if r >= CRITICAL_PER_MILLE => PressureLevel::Critical,
        r if r >= PREPARE_COMPACTION_PER_MILLE => PressureLevel::High,
        r if r >= ELEVATED_PER_MILLE => PressureLevel::Elevated,
        _ => PressureLevel::Low,
    };
    let prepare = ratio >= PREPARE_COMPACTION_PER_MILLE;
    let advice = if prepare {
        "; save scratch, checkpoint and evidence now, before the host compacts"
    } else {
        ""
    };
    Pressure {
        status: PressureStatus::Ready,
        level,
        basis,
        used_tokens: Some(used),
        remaining_tokens: Some(remaining),
        ratio_per_mille: Some(ratio),
        should_prepare_compaction: prepare,
        note: format!(
            "{used} tokens used, {remaining} remaining, {}.{}% of the {limit}-token {limit_name}{advice}",
            ratio / 10,
            ratio % 10
        ),
        ..unknown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(used: i64, total: i64, window: Option<i64>, auto: Option<i64>) -> Pressure {
        assess_pressure(Some(&Telemetry {
            total_tokens: total,
            last_turn_tokens: used,
            model_context_window: window,
            model_auto_compact_token_limit: auto,
        }))
    }

    #[test]
    fn no_telemetry_is_unknown() {
        let pressure = assess_pressure(None);
        assert_eq!(pressure.status, PressureStatus::Unknown);
        assert_eq!(pressure.level, PressureLevel::Unknown);
        assert_eq!(pressure.basis, PressureBasis::Unknown);
        assert!(!pressure.should_prepare_compaction);
    }

    #[test]
    fn auto_compact_limit_wins_over_the_window() {
        let pressure = reading(82, 0, Some(200), Some(100));
        assert_eq!(pressure.basis, PressureBasis::AutoCompactLimit);
        assert_eq!(pressure.ratio_per_mille, Some(820));
        assert_eq!(pressure.level, PressureLevel::High);
        assert_eq!(pressure.remaining_tokens, Some(18));
        assert!(pressure.should_prepare_compaction);
        assert_eq!(pressure.model_context_window, Some(200));
        assert!(pressure.note.contains("82.0%"), "{}", pressure.note);
    }

    #[test]
    fn thresholds_79_80_95() {
        let at = |used| reading(used, 0, None, Some(100));
        assert_eq!(at(64).level, PressureLevel::Low);
        assert_eq!(at(65).level, PressureLevel::Elevated);
        assert_eq!(at(79).level, PressureLevel::Elevated);
        assert!(!at(79).should_prepare_compaction);
        assert_eq!(at(80).level, PressureLevel::High);
        assert!(at(80).should_prepare_compaction);
        assert_eq!(at(94).level, PressureLevel::High);
        assert_eq!(at(95).level, PressureLevel::Critical);
        assert_eq!(at(130).remaining_tokens, Some(-30));
    }

    #[test]
    fn cumulative_spend_is_not_pressure() {
        let elevated = reading(70, 310, None, Some(100));
        assert_eq!(elevated.level, PressureLevel::Elevated);
        let cumulative = reading(0, 310, Some(200), None);
        assert_eq!(cumulative.status, PressureStatus::Unknown);
        assert_eq!(cumulative.used_tokens, None);
        assert_eq!(cumulative.model_context_window, Some(200));
    }

    #[test]
    fn window_basis_and_missing_limits() {
        let window = reading(150, 0, Some(200), None);
        assert_eq!(window.basis, PressureBasis::ModelContextWindow);
        assert_eq!(window.ratio_per_mille, Some(750));
        assert_eq!(window.level, PressureLevel::Elevated);
        let zero_auto = reading(150, 0, Some(200), Some(0));
        assert_eq!(zero_auto.basis, PressureBasis::ModelContextWindow);
        let none = reading(150, 0, None, None);
        assert_eq!(none.status, PressureStatus::Unknown);
        assert_eq!(none.basis, PressureBasis::Unknown);
        assert_eq!(none.used_tokens, Some(150));
        assert_eq!(none.ratio_per_mille, None);
    }

    #[test]
    fn huge_counts_saturate() {
        let pressure = reading(i64::MAX, 0, None, Some(1));
        assert_eq!(pressure.level, PressureLevel::Critical);
    }

    /// `used × 1000` overflowed an i64 for counts past 9.2 × 10^15: a full window read as
    /// `low` (92‰).
    #[test]
    fn a_full_window_is_critical_at_any_size() {
        for size in [1, 1 << 40, 100_000_000_000_000_000, i64::MAX] {
            let full = reading(size, 0, Some(size), None);
            assert_eq!(full.ratio_per_mille, Some(1000), "{size}");
            assert_eq!(full.level, PressureLevel::Critical, "{size}");
        }
    }
}
