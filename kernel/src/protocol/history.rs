//! Execution history, kept per kernelspec across restarts (one JSON line per cell) and served
//! to `history_request` (tail, range and search).

use std::io::Write;
use std::path::PathBuf;

use serde_json::{json, Value};
use tensorbook::contract::env;

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Entry {
    session: u64,
    line: u64,
    input: String,
    #[serde(default)]
    output: Option<String>,
}

/// The history of one kernelspec.
pub struct History {
    path: Option<PathBuf>,
    session: u64,
    entries: Vec<Entry>,
}

fn history_file(kernel_name: &str) -> Option<PathBuf> {
    let dir = env::history_dir()?;
    let safe: String = kernel_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    Some(dir.join(format!("{safe}.jsonl")))
}

/// The longest history search pattern answered (IPython's are a line at most).
const MAX_PATTERN_BYTES: usize = 4096;

/// Matches `*` and `?` globs, as IPython's history search does. Iterative, with one
/// backtrack point (the last `*`): linear in memory and at most pattern x text steps, whatever
/// a request's pattern holds.
pub(crate) fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    // After the last `*`: where the pattern resumes, and the text position it matched up to.
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi + 1, ti));
                pi += 1;
            }
            Some(&c) if c == '?' || c == t[ti] => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                // Let the last `*` take one more character and try again from there.
                Some((resume, matched)) => {
                    pi = resume;
                    ti = matched + 1;
                    star = Some((resume, matched + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

impl History {
    /// Loads the history of `kernel_name` and starts a new session number.
    pub fn open(kernel_name: &str) -> History {
        let path = history_file(kernel_name);
        let entries: Vec<Entry> = path
            .as_ref()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .map(|text| {
                text.lines()
                    .filter_map(|l| serde_json::from_str(l).ok())
                    .collect()
            })
            .unwrap_or_default();
        let session = entries.iter().map(|e| e.session).max().unwrap_or(0) + 1;
        History {
            path,
            session,
            entries,
        }
    }

    /// Records a finished cell as execution `line` of this session, with its text result.
    pub fn record(&mut self, line: u64, input: &str, output: Option<String>) {
        let entry = Entry {
            session: self.session,
            line,
            input: input.to_string(),
            output,
        };
        if let Some(path) = &self.path {
            // History is a convenience: failing to persist it must not fail the cell.
            let appended = path
                .parent()
                .map(std::fs::create_dir_all)
                .transpose()
                .ok()
                .and_then(|_| {
                    std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(path)
                        .ok()
                });
            if let (Some(mut file), Ok(line)) = (appended, serde_json::to_string(&entry)) {
                let _ = writeln!(file, "{line}");
            }
        }
        self.entries.push(entry);
    }

    /// The content of a `history_reply` for a `history_request`'s content.
    pub fn reply(&self, request: &Value) -> Value {
        let n = request["n"].as_u64().unwrap_or(10) as usize;
        let selected: Vec<&Entry> = match request["hist_access_type"].as_str().unwrap_or("tail") {
            "range" => {
                let raw = request["session"].as_i64().unwrap_or(0);
                let session = if raw <= 0 {
                    (self.session as i64 + raw).max(0) as u64
                } else {
                    raw as u64
                };
                let start = request["start"].as_u64().unwrap_or(0);
                let stop = request["stop"].as_u64().unwrap_or(u64::MAX);
                self.entries
                    .iter()
                    .filter(|e| e.session == session && e.line >= start && e.line < stop)
                    .collect()
            }
            "search" => {
                let pattern = request["pattern"].as_str().unwrap_or("*");
                if pattern.len() > MAX_PATTERN_BYTES {
                    return json!({
                        "status": "error",
                        "ename": "PatternTooLong",
                        "evalue": format!(
                            "a history search pattern of {} bytes; at most {MAX_PATTERN_BYTES}",
                            pattern.len()
                        ),
                        "traceback": [],
                        "history": [],
                    });
                }
                let unique = request["unique"].as_bool().unwrap_or(false);
                let mut hits: Vec<&Entry> = self
                    .entries
                    .iter()
                    .filter(|e| glob(pattern, &e.input))
                    .collect();
                if unique {
                    let mut seen = std::collections::HashSet::new();
                    hits.reverse();
                    hits.retain(|e| seen.insert(e.input.as_str()));
                    hits.reverse();
                }
                let skip = hits.len().saturating_sub(n);
                hits.split_off(skip)
            }
            _ => {
                let skip = self.entries.len().saturating_sub(n);
                self.entries[skip..].iter().collect()
            }
        };
        let with_output = request["output"].as_bool().unwrap_or(false);
        let history: Vec<Value> = selected
            .iter()
            .map(|e| {
                if with_output {
                    json!([e.session, e.line, [e.input, e.output]])
                } else {
                    json!([e.session, e.line, e.input])
                }
            })
            .collect();
        json!({ "status": "ok", "history": history })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob("let*", "let x = 1;"));
        assert!(glob("*x?=*", "let x = 1;"));
        assert!(!glob("*y*", "let x = 1;"));
        assert!(glob("*x ?*", "let x = 1;"));
        assert!(!glob("fn*", "let x"));
        assert!(glob("a*b*c", "a_b_b_c"));
        assert!(!glob("a*b*c", "a_b_b_"));
        assert!(glob("**", ""));
        assert!(glob("*é?", "let é = 1; éé"));
        // Patterns that make a recursive matcher exponential or overflow its stack.
        let text = "a".repeat(5000);
        assert!(!glob(&format!("{}b", "*a".repeat(2000)), &text));
        assert!(glob(&"?".repeat(5000), &text));
        assert!(!glob(&"?".repeat(100_000), &text));
    }

    #[test]
    fn tail_range_search_and_persistence() {
        let dir = tempfile::tempdir().expect("tempdir");
        env::set(env::HISTORY_DIR, dir.path());
        let mut h = History::open("unit");
        h.record(1, "let a = 1;", None);
        h.record(2, "let b = 2;", Some("2".into()));
        h.record(3, "let a = 1;", None);
        let out = h.reply(&json!({"hist_access_type": "tail", "n": 2, "output": true}));
        assert_eq!(out["history"][0][2], json!(["let b = 2;", "2"]));
        let tail = h.reply(&json!({"hist_access_type": "tail", "n": 2}));
        assert_eq!(tail["history"].as_array().map(Vec::len), Some(2));
        let range =
            h.reply(&json!({"hist_access_type": "range", "session": 0, "start": 2, "stop": 3}));
        assert_eq!(range["history"][0][2], "let b = 2;");
        let search =
            h.reply(&json!({"hist_access_type": "search", "pattern": "let a*", "unique": true}));
        assert_eq!(search["history"].as_array().map(Vec::len), Some(1));
        let next = History::open("unit");
        assert_eq!(next.session, h.session + 1);
        let all = next.reply(&json!({"hist_access_type": "tail", "n": 10}));
        assert_eq!(all["history"].as_array().map(Vec::len), Some(3));
    }
}
