//! What a layer decided, as one `tracing` event per decision: with
//! telemetry on, mcp-chain makes each a span event of the request's span
//! (named `mcp_chain.<layer>.<outcome>`, its fields the event's
//! attributes) and counts it by layer and outcome. Without telemetry
//! nothing listens for them at this target and level, and an event costs
//! the check of a callsite's cached interest.
//!
//! A decision's fields are mcp-chain's own words and numbers (a rule as
//! configured, a count, a size, a JSON pointer into a schema, field
//! names): never an argument, a result or a secret.

/// The target every decision is an event of.
pub const TARGET: &str = "mcp_chain::decision";

/// Records that `layer` decided `outcome` (both literals), with the fields
/// that say how: `decided!("filter", "denied", rule = %rule)`.
#[macro_export]
macro_rules! decided {
    ($layer:literal, $outcome:literal $(, $($field:tt)+)?) => {
        ::tracing::info!(
            target: "mcp_chain::decision",
            layer = $layer,
            outcome = $outcome,
            $($($field)+ ,)?
            "{}",
            concat!("mcp_chain.", $layer, ".", $outcome)
        )
    };
}

/// A count or size as a decision records it: OpenTelemetry's integers are
/// signed, and an unsigned one would be written as text.
pub fn int(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
