//! Flink's built-in functions in the engine: which ones Riffle runs, and their implementations
//! where DataFusion has none or behaves differently.
//!
//! A function call is planned only when its (DataFusion) name is in [`VERIFIED_FUNCTIONS`] — a
//! DataFusion function whose behaviour a conformance case showed equal to Flink's — or is one of
//! Riffle's own implementations ([`RIFFLE_FUNCTIONS`]), registered under Flink's names and
//! replacing DataFusion's functions of the same name, so planner and runtime both see Flink's
//! behaviour.

mod aggregate;
mod cast;
mod charset;
mod clock;
mod collection;
mod convert;
mod decimal;
mod encoding;
mod extremes;
mod fdlibm;
mod json;
mod math;
mod mixed_equality;
mod predicates;
mod printf;
mod random;
mod regex;
mod row;
mod string;
mod syntax;
mod temporal;
mod url;
mod zone;

pub use aggregate::tag_cast_arguments;
pub use cast::{case_timestamp_branches, flink_casts, is_supported_cast, FLINK_TYPE_KEY};
pub use clock::now_ms;
pub use collection::syntax::rewrite_collections;
pub use convert::{decimal_of_double, double_of_decimal};
pub use decimal::decimal_division;
pub use json::syntax::rewrite_json;
pub use predicates::rewrite_predicates;
pub use syntax::{rewrite_calls, rewrite_typeof};
pub use zone::LocalZone;

datafusion::common::extensions_options! {
    /// Flink's session options the functions depend on.
    pub struct FlinkOptions {
        /// `table.local-time-zone`.
        pub local_time_zone: String, default = "UTC".to_string()
    }
}

impl datafusion::common::config::ConfigExtension for FlinkOptions {
    const PREFIX: &'static str = "flink";
}

use std::sync::Arc;

use datafusion::execution::context::SessionState;
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::{AggregateUDF, ScalarUDF};

use string::{StringFunction, StringOp};

/// DataFusion functions checked against Flink's behaviour by conformance cases; any other
/// DataFusion function is rejected as unsupported rather than run with possibly different
/// semantics. Names are DataFusion's (lower case).
pub const VERIFIED_FUNCTIONS: &[&str] = &[
    "atan2",
    "btrim",
    // `row.field`: nexmark/ cases. Riffle's ROW producers (JSON decoding, the nexmark source)
    // null a null ROW's fields, which DataFusion's get_field returns as they are.
    "get_field",
    "coalesce",
    "concat_ws",
    "nullif",
    "character_length",
    "cos",
    "degrees",
    "lower",
    "make_array",
    "ltrim",
    "pi",
    "radians",
    "repeat",
    "reverse",
    "rtrim",
    "sin",
    "struct",
    "tan",
    "upper",
    "uuid",
];

/// Riffle's own implementations of Flink functions (they follow Flink by construction).
fn riffle_functions() -> Vec<ScalarUDF> {
    let rules = string::row_functions()
        .into_iter()
        .chain(regex::row_functions())
        .chain(encoding::row_functions())
        .chain(charset::row_functions())
        .chain(random::row_functions())
        .chain(clock::row_functions())
        .chain(math::row_functions())
        .chain(temporal::row_functions())
        .chain(cast::row_functions())
        .chain(json::row_functions())
        .chain(collection::row_functions())
        .chain(predicates::row_functions())
        .chain(url::row_functions())
        .chain(printf::row_functions())
        .chain(decimal::row_functions())
        .map(row::udf);
    let mut functions = vec![
        ScalarUDF::from(temporal::Proctime::new()),
        ScalarUDF::from(aggregate::TaggedCast::new()),
        ScalarUDF::from(temporal::ToTimestampLtz::new()),
        ScalarUDF::from(temporal::ToTimestamp::new()),
        ScalarUDF::from(StringFunction::new("concat", StringOp::Concat)),
        ScalarUDF::from(StringFunction::new("left", StringOp::Left)),
        ScalarUDF::from(StringFunction::new("right", StringOp::Right)),
        ScalarUDF::from(StringFunction::new("substr", StringOp::Substr)),
        ScalarUDF::from(extremes::Extreme::new(
            "greatest",
            std::cmp::Ordering::Greater,
        )),
        ScalarUDF::from(extremes::Extreme::new("least", std::cmp::Ordering::Less)),
    ];
    functions.extend(rules);
    functions
}

/// Names (and aliases) of the functions [`register`] adds (they follow Flink by construction).
pub fn riffle_function_names() -> &'static std::collections::BTreeSet<String> {
    static NAMES: std::sync::OnceLock<std::collections::BTreeSet<String>> =
        std::sync::OnceLock::new();
    NAMES.get_or_init(|| {
        riffle_functions()
            .iter()
            .flat_map(|f| std::iter::once(f.name().to_string()).chain(f.aliases().iter().cloned()))
            .collect()
    })
}

/// True when the engine may run the scalar function DataFusion calls `name`.
pub fn is_supported(name: &str) -> bool {
    VERIFIED_FUNCTIONS.contains(&name) || riffle_function_names().contains(name)
}

/// Registers Riffle's Flink functions into `state`.
pub fn register(state: &mut SessionState) {
    for f in riffle_functions() {
        // Registration only fails for invalid names; these are constants.
        let _ = state.register_udf(Arc::new(f));
    }
    for name in [
        "sum",
        "avg",
        "min",
        "max",
        "stddev_pop",
        "stddev_samp",
        "var_pop",
        "var_samp",
        "listagg",
        "first_value",
        "last_value",
        "group_id",
    ] {
        let _ = state.register_udaf(Arc::new(AggregateUDF::from(
            aggregate::FlinkAggregate::new(name),
        )));
    }
    let _ = state.register_expr_planner(mixed_equality::string_boolean_equality());
    let _ = state.register_expr_planner(mixed_equality::interval_times_integer());
    // Flink's GROUPING_ID(a, b, ..) is DataFusion's GROUPING over several columns: one bit per
    // column, set when the row's grouping set leaves it out, the first column most significant.
    let grouping = datafusion::functions_aggregate::grouping::grouping_udaf();
    let _ = state.register_udaf(Arc::new(
        grouping.as_ref().clone().with_aliases(["grouping_id"]),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn riffle_functions_are_supported_and_not_also_verified() {
        for f in riffle_functions() {
            assert!(is_supported(f.name()), "{}", f.name());
            assert!(!VERIFIED_FUNCTIONS.contains(&f.name()), "{}", f.name());
        }
    }
}
