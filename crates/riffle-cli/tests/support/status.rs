//! `riffle job status` output with what changes from run to run replaced, for snapshots:
//! member ids, checkpoint numbers, state bytes, the offsets of an input queue consumed to its
//! end (a source queue that lags keeps its numbers, so a snapshot of a finished job shows it),
//! and every number of a shuffle queue: it holds as many messages as the batching made, and a
//! producer unit restored after it reported the end of its input reports it again — a marker
//! that consumers which already ended never read. The newest complete job checkpoint's
//! number depends on how long the job ran: it becomes `<n>` (or stays `none complete`).

/// The text form, normalized.
pub fn normalize_text(text: &str) -> String {
    let mut members = Vec::new();
    let mut section = "";
    let mut out = String::new();
    for line in text.lines() {
        let normalized = if line.starts_with("UNIT ") {
            section = "units";
            line.to_string()
        } else if line.starts_with("STAGE ") {
            section = "state";
            line.to_string()
        } else if line.is_empty() {
            line.to_string()
        } else if let Some(rest) = line.strip_prefix("job checkpoint: ") {
            let n = if rest == "none complete" {
                rest
            } else {
                "<n> complete"
            };
            format!("job checkpoint: {n}")
        } else if let Some(rest) = line.strip_prefix("  ") {
            // "  <member>  units ...": the member's id varies.
            let (member, units) = rest.split_once("  ").unwrap_or((rest, ""));
            members.push(member.to_string());
            format!("  member-{}  {units}", members.len())
        } else if section == "units" {
            let tokens: Vec<&str> = line.split_whitespace().collect();
            let field = |i: usize| tokens.get(i).copied().unwrap_or_default();
            let (unit, state) = (field(0), field(1));
            let checkpoint = if field(2) == "-" { "-" } else { "<n>" };
            // Inputs: "<topic>[<queue>] <consumed>/<end> lag <n>" separated by ", ".
            let mut rest = line.trim_start();
            for _ in 0..3 {
                rest = rest
                    .split_once(char::is_whitespace)
                    .map_or("", |(_, r)| r.trim_start());
            }
            let inputs: Vec<String> = rest
                .split(", ")
                .filter(|input| !input.is_empty())
                .map(normalize_input)
                .collect();
            format!(
                "{unit:<6} {state:<9} {checkpoint:<11} {}",
                inputs.join(", ")
            )
        } else if section == "state" {
            let tokens: Vec<&str> = line.split_whitespace().collect();
            let stage = tokens.first().copied().unwrap_or_default();
            let operator = tokens.get(2..).unwrap_or_default().join(" ");
            format!("{stage:<6} {:<12} {operator}", "<bytes>")
        } else {
            line.to_string()
        };
        out.push_str(normalized.trim_end());
        out.push('\n');
    }
    out
}

/// One "<topic>[<queue>] <consumed>/<end> lag <n>" input of a unit, normalized.
fn normalize_input(input: &str) -> String {
    let tokens: Vec<&str> = input.split_whitespace().collect();
    let (queue, offsets, lag) = match tokens.as_slice() {
        [queue, offsets, "lag", lag] => (*queue, *offsets, *lag),
        _ => return input.to_string(),
    };
    if queue.contains("-shuffle[") {
        return format!("{queue} <n>/<n> lag <n>");
    }
    match offsets.split_once('/') {
        Some((consumed, end)) if consumed == end => format!("{queue} <n>/<n> lag {lag}"),
        _ => input.to_string(),
    }
}

/// The JSON form, normalized the same way.
pub fn normalize_json(mut value: serde_json::Value) -> serde_json::Value {
    if let Some(members) = value["members"].as_array_mut() {
        for (i, m) in members.iter_mut().enumerate() {
            *m = format!("member-{}", i + 1).into();
        }
    }
    if let Some(units) = value["units"].as_array_mut() {
        for unit in units {
            if unit["owner"].is_string() {
                unit["owner"] = "<member>".into();
            }
            if unit["checkpoint"].is_number() {
                unit["checkpoint"] = "<n>".into();
            }
            if let Some(lags) = unit["lag"].as_array_mut() {
                for lag in lags {
                    let shuffle = lag["topic"]
                        .as_str()
                        .is_some_and(|t| t.ends_with("-shuffle"));
                    if shuffle || lag["consumed"] == lag["end"] {
                        lag["consumed"] = "<n>".into();
                        lag["end"] = "<n>".into();
                    }
                }
            }
        }
    }
    if value["job_checkpoint"].is_number() {
        value["job_checkpoint"] = "<n>".into();
    }
    if let Some(state) = value["state"].as_array_mut() {
        for s in state {
            s["bytes"] = "<bytes>".into();
        }
    }
    value
}
