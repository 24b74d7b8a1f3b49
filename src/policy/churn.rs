//! The churn vocabulary (docs/state.md#churn) that drafting and gating share: how the
//! conventional `diff_pressure` values rank.

/// How much a diff presses: `low` < `medium` < `high` < `critical`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum DiffPressure {
    /// Rank 1.
    Low = 1,
    /// Rank 2.
    Medium = 2,
    /// Rank 3.
    High = 3,
    /// Rank 4.
    Critical = 4,
}

impl DiffPressure {
    /// The conventional spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            DiffPressure::Low => "low",
            DiffPressure::Medium => "medium",
            DiffPressure::High => "high",
            DiffPressure::Critical => "critical",
        }
    }
}

/// The rank of a `diff_pressure` value, trimmed and ASCII-case-insensitive: 1 to 4 for the
/// conventional values, 0 for anything else.
pub fn diff_pressure_rank(value: &str) -> u8 {
    match value.trim().to_ascii_lowercase().as_str() {
        "low" => DiffPressure::Low as u8,
        "medium" => DiffPressure::Medium as u8,
        "high" => DiffPressure::High as u8,
        "critical" => DiffPressure::Critical as u8,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_ignore_case_and_padding() {
        assert_eq!(diff_pressure_rank(" LOW "), 1);
        assert_eq!(diff_pressure_rank("Medium"), 2);
        assert_eq!(diff_pressure_rank("high"), 3);
        assert_eq!(diff_pressure_rank("critical"), 4);
        assert_eq!(diff_pressure_rank("severe"), 0);
        assert_eq!(diff_pressure_rank(""), 0);
        for pressure in [
            DiffPressure::Low,
            DiffPressure::Medium,
            DiffPressure::High,
            DiffPressure::Critical,
        ] {
            assert_eq!(diff_pressure_rank(pressure.as_str()), pressure as u8);
        }
    }
}
