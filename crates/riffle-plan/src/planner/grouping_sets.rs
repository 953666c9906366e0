//! `GROUPING SETS`, `ROLLUP` and `CUBE`, planned as Flink plans them: an Expand operator turns
//! every input row into one row per grouping set (the keys left out of the set set to NULL, plus
//! the set's grouping id), and an ordinary aggregation groups by all keys and the grouping id.
//!
//! The grouping id follows DataFusion's `__grouping_id` layout (one bit per key, set when the key
//! is left out, first key most significant; a duplicate set's ordinal above those bits), so the
//! projection DataFusion plans above the aggregation reads it unchanged.

use datafusion::common::{DFSchema, Result as DfResult, ScalarValue};
use datafusion::logical_expr::{Aggregate, Expr, GroupingSet};

use super::{df_error, plan_error, GraphBuilder, Node, PlanResult};
use crate::graph::OperatorKind;

/// The grouping sets of one aggregation over its distinct key expressions.
pub(super) struct GroupingSets {
    /// Every key expression that appears in some set, in DataFusion's (output) order.
    pub keys: Vec<Expr>,
    /// Per set: which keys it leaves out (NULL), and its grouping id.
    sets: Vec<(Vec<bool>, u64)>,
}

impl GroupingSets {
    /// The grouping sets of `GROUP BY` expressions, or `None` for a plain `GROUP BY`.
    pub fn of(group_expr: &[Expr]) -> DfResult<Option<Self>> {
        let [Expr::GroupingSet(set)] = group_expr else {
            return Ok(None);
        };
        let keys: Vec<Expr> = set.distinct_expr().into_iter().cloned().collect();
        let members: Vec<Vec<&Expr>> = match set {
            GroupingSet::GroupingSets(sets) => sets.iter().map(|s| s.iter().collect()).collect(),
            // A rollup keeps ever shorter prefixes: (a, b), (a), ().
            GroupingSet::Rollup(exprs) => (0..=exprs.len())
                .rev()
                .map(|n| exprs[..n].iter().collect())
                .collect(),
            // A cube keeps every subset, the full set first and the empty set last.
            GroupingSet::Cube(exprs) => {
                let n = exprs.len();
                if n >= 16 {
                    return datafusion::common::not_impl_err!(
                        "unsupported feature: CUBE over {n} expressions"
                    );
                }
                (0..1u32 << n)
                    .map(|mask| {
                        exprs
                            .iter()
                            .enumerate()
                            .filter(|(i, _)| mask & (1 << (n - 1 - i)) == 0)
                            .map(|(_, e)| e)
                            .collect()
                    })
                    .collect()
            }
        };
        if keys.len() > 32 {
            return datafusion::common::not_impl_err!(
                "unsupported feature: grouping sets over more than 32 keys"
            );
        }
        let mut seen: Vec<u64> = Vec::new();
        let sets = members
            .iter()
            .map(|members| {
                let nulled: Vec<bool> = keys.iter().map(|k| !members.contains(&k)).collect();
                let mask = nulled
                    .iter()
                    .fold(0u64, |acc, n| (acc << 1) | u64::from(*n));
                // A set listed twice still forms groups of its own, told apart by an ordinal.
                let ordinal = seen.iter().filter(|m| **m == mask).count() as u64;
                seen.push(mask);
                (nulled, mask | (ordinal << keys.len()))
            })
            .collect::<Vec<_>>();
        // Flink plans the n-th copies of repeated sets (n >= 1) as an aggregation of their
        // own; when that is a single set, it groups by every key instead (keys are not set to
        // NULL) while GROUPING() still reports the set's own bits.
        let ordinal_of = |id: u64| id >> keys.len();
        let sets = sets
            .iter()
            .map(|(nulled, id)| {
                let ordinal = ordinal_of(*id);
                let alone = sets
                    .iter()
                    .filter(|(_, o)| ordinal_of(*o) == ordinal)
                    .count()
                    == 1;
                if ordinal >= 1 && alone {
                    (vec![false; nulled.len()], *id)
                } else {
                    (nulled.clone(), *id)
                }
            })
            .collect();
        Ok(Some(Self { keys, sets }))
    }

    /// Whether key `index` is present (not NULL) in every set.
    pub fn in_every_set(&self, index: usize) -> bool {
        self.sets.iter().all(|(nulled, _)| !nulled[index])
    }
}

impl GraphBuilder<'_> {
    /// An Expand operator computing `pre` once per grouping set: `pre` holds the keys, then a
    /// placeholder for the grouping id, then the aggregate arguments, among them the
    /// `group_ids` placeholders of `GROUP_ID()` (set to the set's ordinal among equal sets);
    /// `out_schema` names them.
    pub(super) fn expand(
        &mut self,
        input: Node,
        sets: &GroupingSets,
        agg: &Aggregate,
        pre: &[Expr],
        group_ids: &[usize],
        out_schema: &DFSchema,
    ) -> PlanResult<Node> {
        let span = self.span;
        let keys = sets.keys.len();
        let id_type = agg.schema.field(keys).data_type().clone();
        let mut projections = Vec::with_capacity(sets.sets.len());
        let mut fields = None;
        for (nulled, raw_id) in &sets.sets {
            let id = ScalarValue::UInt64(Some(*raw_id))
                .cast_to(&id_type)
                .map_err(|e| df_error(e, span))?;
            let exprs: Vec<Expr> = pre
                .iter()
                .enumerate()
                .map(|(i, e)| match i {
                    i if i < keys && nulled[i] => Expr::Literal(ScalarValue::Null, None),
                    i if i == keys => Expr::Literal(id.clone(), None),
                    i if group_ids.contains(&i) => {
                        let ordinal = i64::try_from(raw_id >> keys).unwrap_or_default();
                        Expr::Literal(ScalarValue::Int64(Some(ordinal)), None)
                    }
                    _ => e.clone(),
                })
                .collect();
            let (projection, set_fields) = self.projection(&input, &exprs, out_schema)?;
            projections.push(projection);
            // Each column's type comes from a set that computes it; a key left out of some
            // set may be NULL.
            let merged = fields.get_or_insert_with(|| set_fields.clone());
            for (i, field) in set_fields.into_iter().enumerate() {
                if i < keys && nulled[i] {
                    continue;
                }
                if merged[i].arrow_type == "Null" {
                    merged[i] = field;
                }
            }
        }
        let Some(mut fields) = fields else {
            return Err(plan_error("GROUPING SETS without any set", span));
        };
        for field in fields.iter_mut().take(keys) {
            field.nullable = true;
            field.rowtime = false;
        }
        let changelog = input.changelog;
        Ok(self.add(
            OperatorKind::Expand { projections },
            self.parallelism,
            fields,
            changelog,
            &[(&input, crate::graph::Partitioning::Forward)],
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::logical_expr::col;

    fn ids(group: Expr) -> Vec<(Vec<bool>, u64)> {
        GroupingSets::of(&[group]).unwrap().unwrap().sets
    }

    #[test]
    fn rollup_drops_trailing_keys_one_by_one() {
        let sets = ids(Expr::GroupingSet(GroupingSet::Rollup(vec![
            col("a"),
            col("b"),
        ])));
        assert_eq!(
            sets,
            vec![
                (vec![false, false], 0b00),
                (vec![false, true], 0b01),
                (vec![true, true], 0b11),
            ]
        );
    }

    #[test]
    fn cube_lists_every_subset() {
        let sets = ids(Expr::GroupingSet(GroupingSet::Cube(vec![
            col("a"),
            col("b"),
        ])));
        let ids: Vec<u64> = sets.iter().map(|(_, id)| *id).collect();
        assert_eq!(ids, vec![0b00, 0b01, 0b10, 0b11]);
    }

    #[test]
    fn a_repeated_set_gets_its_own_ordinal() {
        let sets = ids(Expr::GroupingSet(GroupingSet::GroupingSets(vec![
            vec![col("a")],
            vec![col("b")],
            vec![col("a")],
        ])));
        let ids: Vec<u64> = sets.iter().map(|(_, id)| *id).collect();
        assert_eq!(ids, vec![0b01, 0b10, 0b101]);
    }

    #[test]
    fn plain_group_by_has_no_sets() {
        assert!(GroupingSets::of(&[col("a")]).unwrap().is_none());
    }
}
