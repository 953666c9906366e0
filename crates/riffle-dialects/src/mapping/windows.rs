//! `group-windows.toml`: legacy group windows <-> window table-valued functions.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::FlinkVersion;
use crate::{Dialects, FunctionKind};

/// The whole file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupWindows {
    /// The windows.
    #[serde(rename = "window")]
    pub windows: Vec<WindowSpec>,
    /// Auxiliary function suffix (`START`) -> window column (`window_start`).
    pub auxiliary: BTreeMap<String, String>,
    /// The columns a window TVF adds.
    pub window_columns: Vec<String>,
}

/// One window kind, in both forms.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowSpec {
    /// `TUMBLE`, `HOP`, `SESSION`.
    pub name: String,
    /// The arguments after the time attribute, in order.
    pub args: Vec<String>,
    /// The Flink release that added the TVF form.
    pub tvf_since: FlinkVersion,
    /// Whether the TVF must partition by the other GROUP BY keys.
    #[serde(default)]
    pub partition_by_group_keys: bool,
}

impl GroupWindows {
    /// The window called `name` (case-insensitive).
    pub fn window(&self, name: &str) -> Option<&WindowSpec> {
        self.windows
            .iter()
            .find(|w| w.name.eq_ignore_ascii_case(name))
    }

    /// For an auxiliary function name (`TUMBLE_START`): its window and the window column.
    pub fn auxiliary(&self, function: &str) -> Option<(&WindowSpec, &str)> {
        let upper = function.to_ascii_uppercase();
        let (window, suffix) = upper.split_once('_')?;
        let column = self.auxiliary.get(suffix)?;
        Some((self.window(window)?, column.as_str()))
    }

    /// The legacy auxiliary function of `window` that yields `column` (the first one listed).
    pub fn auxiliary_for_column(&self, window: &WindowSpec, column: &str) -> Option<String> {
        self.auxiliary
            .iter()
            .find(|(suffix, c)| c.as_str() == column && suffix.as_str() != "PROCTIME")
            .map(|(suffix, _)| format!("{}_{suffix}", window.name))
    }

    pub(crate) fn check(&self, dialects: &Dialects) -> Result<(), String> {
        for w in &self.windows {
            let is_window = dialects
                .function(&w.name)
                .is_some_and(|f| f.kind == FunctionKind::Window);
            if !is_window {
                return Err(format!("`{}` is not a Flink window function", w.name));
            }
            for suffix in self.auxiliary.keys() {
                let name = format!("{}_{suffix}", w.name);
                if dialects.function(&name).is_none() {
                    return Err(format!("`{name}` is not a Flink function"));
                }
            }
        }
        for column in self.auxiliary.values() {
            if !self.window_columns.contains(column) {
                return Err(format!("`{column}` is not among `window_columns`"));
            }
        }
        Ok(())
    }
}
