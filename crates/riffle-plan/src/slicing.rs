//! Slice sharing for hopping-window aggregations (see [`SharedSlices`]).
//!
//! The pass looks for a `HOP` window assigner whose rows reach exactly one window aggregation,
//! directly or through one `Calc` that passes `window_start`/`window_end` on unchanged and
//! reads no window column otherwise. When the aggregation groups by both window bounds, reads
//! them nowhere else and computes only functions whose accumulators merge exactly, the
//! assigner is set to put each row into its one slice and the aggregation to merge slices.
//! Rows of one key must meet on one subtask in every slice of a window, so the aggregation's
//! input is then hashed by its other keys only (as Flink's window aggregation is).

use crate::graph::{
    AggregateCall, AggregateFunction, JobGraph, OperatorId, OperatorKind, Partitioning,
    SharedSlices, WindowSpec,
};
use crate::read_columns::Exprs;
use crate::session::FlinkSession;
use crate::window::slice_triggers;

/// Makes every hopping-window aggregation that can share slices do so.
pub fn share_slices(graph: &mut JobGraph, session: &FlinkSession) {
    for id in 0..graph.operators.len() {
        let Some(rewrite) = sliceable(graph, id, session) else {
            continue;
        };
        if let Some(OperatorKind::WindowAssign { slice, .. }) = graph
            .operators
            .get_mut(rewrite.assigner)
            .map(|op| &mut op.kind)
        {
            *slice = Some(rewrite.slices.slice);
        }
        if let Some(OperatorKind::WindowAggregate { slices, .. }) =
            graph.operators.get_mut(id).map(|op| &mut op.kind)
        {
            *slices = Some(rewrite.slices);
        }
        for edge in graph.edges.iter_mut().filter(|e| e.to == id) {
            if let Partitioning::Hash(columns) = &mut edge.partitioning {
                columns.retain(|c| !rewrite.bounds.contains(c));
            }
        }
    }
}

/// What sharing slices changes for one aggregation.
struct Rewrite {
    /// The window assigner.
    assigner: OperatorId,
    slices: SharedSlices,
    /// The aggregation's input columns of `window_start` and `window_end`.
    bounds: [usize; 2],
}

/// The rewrite of aggregation `id`, when it can share slices.
fn sliceable(graph: &JobGraph, id: OperatorId, session: &FlinkSession) -> Option<Rewrite> {
    let OperatorKind::WindowAggregate {
        keys,
        window_end,
        aggregates,
        slices: None,
        ..
    } = &graph.operators.get(id)?.kind
    else {
        return None;
    };
    let [edge] = graph.inputs_of(id)[..] else {
        return None;
    };
    let only_consumer = |op: OperatorId| graph.outputs_of(op).len() == 1;
    let (calc, assigner) = match &graph.operators.get(edge.from)?.kind {
        OperatorKind::WindowAssign { .. } => (None, edge.from),
        OperatorKind::Calc { .. } => {
            let [input] = graph.inputs_of(edge.from)[..] else {
                return None;
            };
            (Some(edge.from), input.from)
        }
        _ => return None,
    };
    let assign = graph.operators.get(assigner)?;
    let OperatorKind::WindowAssign {
        window: window @ WindowSpec::Hop { .. },
        processing_time: false,
        slice: None,
        ..
    } = &assign.kind
    else {
        return None;
    };
    if !only_consumer(assigner) || !calc.is_none_or(only_consumer) {
        return None;
    }
    // The assigner appends window_start, window_end and window_time to its input's columns.
    let first_bound = assign.schema.len().checked_sub(3)?;
    let [start_out, end_out] = [first_bound, first_bound + 1];
    // Per aggregation input column: the window column it passes on, if any.
    let carried: Vec<Option<usize>> = match calc {
        None => (0..assign.schema.len())
            .map(|c| (c >= first_bound).then_some(c))
            .collect(),
        Some(calc) => {
            let OperatorKind::Calc { filter, projection } = &graph.operators.get(calc)?.kind else {
                return None;
            };
            let exprs = Exprs::new(&assign.schema, session)?;
            let reads_window = |sql: &str| {
                exprs
                    .columns_read(sql)
                    .map(|read| read.iter().skip(first_bound).any(|r| *r))
            };
            if let Some(filter) = filter {
                if reads_window(filter)? {
                    return None;
                }
            }
            projection
                .iter()
                .map(|item| match exprs.plain_column(&item.sql) {
                    Some(c) => Some((c >= first_bound).then_some(c)),
                    None => (!reads_window(&item.sql)?).then_some(None),
                })
                .collect::<Option<_>>()?
        }
    };
    let carries = |column: usize, window_column: usize| {
        carried.get(column).copied().flatten() == Some(window_column)
    };
    let window_start = keys.iter().copied().find(|k| carries(*k, start_out))?;
    if !carries(*window_end, end_out) || !keys.contains(window_end) {
        return None;
    }
    // Window columns serve as these two group keys and nothing else.
    let bounds = [window_start, *window_end];
    let window_columns: Vec<usize> = (0..carried.len())
        .filter(|c| carried[*c].is_some())
        .collect();
    let keyed_bounds = keys.iter().filter(|k| window_columns.contains(k)).count();
    let read_by_calls = aggregates
        .iter()
        .any(|call| call_columns(call).any(|c| window_columns.contains(&c)));
    if keyed_bounds != 2 || read_by_calls {
        return None;
    }
    let input = &graph.operators.get(edge.from)?.schema;
    let mergeable = aggregates.iter().all(|call| {
        let arg_type = call
            .arg
            .and_then(|a| input.get(a))
            .map(|f| f.arrow_type.as_str());
        merges_exactly(call, arg_type)
    });
    if !mergeable {
        return None;
    }
    Some(Rewrite {
        assigner,
        slices: SharedSlices {
            window: *window,
            slice: slice_triggers(window)?.length,
            window_start,
        },
        bounds,
    })
}

/// The input columns `call` reads.
fn call_columns(call: &AggregateCall) -> impl Iterator<Item = usize> + '_ {
    call.arg
        .into_iter()
        .chain(call.filter)
        .chain(call.user.iter().flat_map(|u| u.args.iter().copied()))
}

/// Whether merging per-slice accumulators of `call` gives what Flink's slicing operator gives:
/// counts, sums and averages of integers and floating-point numbers (Flink adds slice sums up
/// in slice order too), and minimum/maximum of an append-only input.
fn merges_exactly(call: &AggregateCall, arg_type: Option<&str>) -> bool {
    if call.distinct || call.user.is_some() {
        return false;
    }
    match call.function {
        AggregateFunction::CountStar
        | AggregateFunction::Count
        | AggregateFunction::Min
        | AggregateFunction::Max => true,
        AggregateFunction::Sum | AggregateFunction::Avg => matches!(
            arg_type,
            Some("Int8" | "Int16" | "Int32" | "Int64" | "Float32" | "Float64")
        ),
        _ => false,
    }
}
