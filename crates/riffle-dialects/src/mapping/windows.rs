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
    /// Window TVF name -> its parameter names in positional order.
    pub tvf_params: BTreeMap<String, Vec<String>>,
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

    /// The legacy auxiliary function of `window` that yields `column`; for `window_time`, the
    /// rowtime or the proctime one.
    pub fn auxiliary_for_column(
        &self,
        window: &WindowSpec,
        column: &str,
        proctime: bool,
    ) -> Option<String> {
        let mut suffixes = self
            .auxiliary
            .iter()
            .filter(|(_, c)| c.as_str() == column)
            .map(|(suffix, _)| suffix.as_str());
        let first = suffixes.next()?;
        let chosen = match suffixes.next() {
            Some(second) => {
                let wanted = if proctime { "PROCTIME" } else { "ROWTIME" };
                [first, second].into_iter().find(|s| *s == wanted)?
            }
            None => first,
        };
        Some(format!("{}_{chosen}", window.name))
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
        for (name, params) in &self.tvf_params {
            let is_window = dialects
                .function(name)
                .is_some_and(|f| f.kind == FunctionKind::Window);
            if !is_window || params.len() < 3 {
                return Err(format!(
                    "`tvf_params.{name}` is not a window TVF's parameter list"
                ));
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

#[cfg(test)]
mod tests {
    #[test]
    fn auxiliaries_map_both_ways() {
        let w = &crate::mappings().windows;
        let (tumble, column) = w
            .auxiliary("tumble_rowtime")
            .unwrap_or_else(|| panic!("known"));
        assert_eq!((tumble.name.as_str(), column), ("TUMBLE", "window_time"));
        let session = w.window("SESSION").unwrap_or_else(|| panic!("known"));
        let back = |c, p| w.auxiliary_for_column(session, c, p);
        assert_eq!(
            back("window_start", false).as_deref(),
            Some("SESSION_START")
        );
        assert_eq!(
            back("window_time", false).as_deref(),
            Some("SESSION_ROWTIME")
        );
        assert_eq!(
            back("window_time", true).as_deref(),
            Some("SESSION_PROCTIME")
        );
        assert_eq!(back("window_size", false), None);
        assert_eq!(w.tvf_params.get("HOP").map(Vec::len), Some(5));
    }
}
