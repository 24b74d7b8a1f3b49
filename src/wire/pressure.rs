//! `pressure --json`: the context-pressure reading
//! ([`crate::policy::pressure::assess_pressure`]).

use serde::Serialize;

use crate::policy::pressure;
use crate::policy::pressure::PressureBasis;
use crate::policy::pressure::PressureLevel;
use crate::policy::pressure::PressureStatus;

/// The pressure reading.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Pressure {
    /// Whether a reading was made.
    pub status: PressureStatus,
    /// How full the context is.
    pub level: PressureLevel,
    /// Which limit the ratio is against.
    pub basis: PressureBasis,
    /// Tokens the context holds now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_tokens: Option<i64>,
    /// The model's context window, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_context_window: Option<i64>,
    /// The auto-compaction threshold, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_auto_compact_token_limit: Option<i64>,
    /// Tokens left before the limit (negative past it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining_tokens: Option<i64>,
    /// `used × 1000 / limit`, rounded down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio_per_mille: Option<i64>,
    /// Time to write a checkpoint before the host compacts.
    pub should_prepare_compaction: bool,
    /// What the reading means.
    pub note: String,
}

moved!(pressure::Pressure => Pressure {
    status, level, basis, used_tokens, model_context_window, model_auto_compact_token_limit,
    remaining_tokens, ratio_per_mille, should_prepare_compaction, note,
});
