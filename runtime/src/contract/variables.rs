//! How the evaluation process describes tensors for the kernel's `:vars`: one marker line
//! ([`super::markers::VARIABLES`]) followed by a JSON array of [`TensorDescription`]s.

use serde_json::{json, Value};

use super::markers::VARIABLES;

/// What `:vars` shows of one tensor variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorDescription {
    /// The variable's name.
    pub name: String,
    /// `f32`, `s64`, ...
    pub dtype: String,
    /// Its dimensions.
    pub shape: Vec<usize>,
    /// Its placement (`host:0`).
    pub device: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// Whether its memory was freed (a transfer or `deallocate`).
    pub deallocated: bool,
    /// For a value that is not a tensor (a compiled function, a stream, a serving): its own
    /// one-line summary, which `:vars` shows instead.
    pub other: Option<String>,
}

impl TensorDescription {
    /// `f32[2][3] on host:0, 24 bytes`, as `:vars` prints it.
    pub fn summary(&self) -> String {
        if let Some(other) = &self.other {
            return other.clone();
        }
        let dims: String = self.shape.iter().map(|d| format!("[{d}]")).collect();
        let mut text = format!(
            "{}{dims} on {}, {} bytes",
            self.dtype, self.device, self.bytes
        );
        if self.deallocated {
            text.push_str(" (deallocated)");
        }
        text
    }

    fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "dtype": self.dtype,
            "shape": self.shape,
            "device": self.device,
            "bytes": self.bytes,
            "deallocated": self.deallocated,
            "other": self.other,
        })
    }

    fn from_json(value: &Value) -> Option<TensorDescription> {
        Some(TensorDescription {
            name: value["name"].as_str()?.to_string(),
            dtype: value["dtype"].as_str()?.to_string(),
            shape: value["shape"]
                .as_array()?
                .iter()
                .map(|d| d.as_u64().and_then(|d| usize::try_from(d).ok()))
                .collect::<Option<_>>()?,
            device: value["device"].as_str()?.to_string(),
            bytes: value["bytes"].as_u64()?,
            deallocated: value["deallocated"].as_bool().unwrap_or(false),
            other: value["other"].as_str().map(str::to_string),
        })
    }
}

/// The line the evaluation process prints (no newline).
pub fn to_line(tensors: &[TensorDescription]) -> String {
    let list: Vec<Value> = tensors.iter().map(TensorDescription::to_json).collect();
    format!("{VARIABLES}{}", Value::Array(list))
}

/// The descriptions in a line, if it is the variables line; entries that do not parse are
/// left out (the kernel then says the tensor could not be described).
pub fn from_line(line: &str) -> Option<Vec<TensorDescription>> {
    let json = line.strip_prefix(VARIABLES)?;
    let list: Vec<Value> = serde_json::from_str(json).unwrap_or_default();
    Some(
        list.iter()
            .filter_map(TensorDescription::from_json)
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_round_trip_and_summarise() {
        let t = TensorDescription {
            name: "x".into(),
            dtype: "f32".into(),
            shape: vec![2, 3],
            device: "host:0".into(),
            bytes: 24,
            deallocated: false,
            other: None,
        };
        let line = to_line(std::slice::from_ref(&t));
        assert_eq!(from_line(&line), Some(vec![t.clone()]));
        assert_eq!(t.summary(), "f32[2][3] on host:0, 24 bytes");
        let gone = TensorDescription {
            deallocated: true,
            ..t
        };
        assert!(gone.summary().ends_with("(deallocated)"));
        let compiled = TensorDescription {
            other: Some("#Function<jit, 1 argument, not compiled yet>".into()),
            ..gone
        };
        let line = to_line(std::slice::from_ref(&compiled));
        assert_eq!(from_line(&line), Some(vec![compiled.clone()]));
        assert!(compiled.summary().starts_with("#Function<jit"));
        assert_eq!(from_line("plain output"), None);
        assert_eq!(
            from_line(&format!("{VARIABLES}[{{\"name\":1}}]")),
            Some(vec![])
        );
    }
}
