//! Axis names (Nx's `names:`): the rules by which an op's result names its axes, as
//! `Nx.Shape` computes them beside the shape. Pure functions over name lists, one entry per
//! axis (`None` for an unnamed axis); the tensor keeps no list at all while every axis is
//! unnamed, so unnamed tensors pay nothing.

use crate::error::{Error, Result};

/// One axis's name, or `None`.
pub type Name = Option<String>;

/// Nx's printed form of a name list: `[:batch, nil]`.
pub fn fmt_names(names: &[Name]) -> String {
    let parts: Vec<String> = names
        .iter()
        .map(|n| match n {
            Some(n) => format!(":{n}"),
            None => "nil".to_string(),
        })
        .collect();
    format!("[{}]", parts.join(", "))
}

/// A shape with its names, as Nx prints it: `[batch: 2][3]`.
pub fn fmt_named_shape(shape: &[usize], names: &[Name]) -> String {
    shape
        .iter()
        .enumerate()
        .map(|(i, d)| match names.get(i) {
            Some(Some(n)) => format!("[{n}: {d}]"),
            _ => format!("[{d}]"),
        })
        .collect()
}

/// The names of a broadcast of operands with `inputs` names into a result of rank `rank`:
/// axes align from the right, an unnamed axis takes the other's name, and two different names
/// on one axis are Nx's error (`cannot merge name :x on axis 0 with name :y on axis 0`).
pub fn broadcast(op: &'static str, inputs: &[&[Name]], rank: usize) -> Result<Vec<Name>> {
    let mut out: Vec<Name> = vec![None; rank];
    for names in inputs {
        let skip = rank.saturating_sub(names.len());
        for (i, name) in names.iter().enumerate() {
            let axis = skip + i;
            let Some(slot) = out.get_mut(axis) else {
                continue;
            };
            match (slot.as_ref(), name) {
                (_, None) => {}
                (None, Some(n)) => *slot = Some(n.clone()),
                (Some(a), Some(b)) if a == b => {}
                (Some(a), Some(b)) => {
                    return Err(Error::InvalidArgument {
                        op,
                        message: format!(
                            "cannot merge name :{a} on axis {axis} with name :{b} on axis {axis}"
                        ),
                    })
                }
            }
        }
    }
    Ok(out)
}

/// The names left after reducing `axes` (kept as size-1 axes, with their names, when `keep`).
pub fn reduce(names: &[Name], axes: &[usize], keep: bool) -> Vec<Name> {
    names
        .iter()
        .enumerate()
        .filter(|(i, _)| keep || !axes.contains(i))
        .map(|(_, n)| n.clone())
        .collect()
}

/// The names after moving axis `permutation[i]` to position `i`.
pub fn permute(names: &[Name], permutation: &[usize]) -> Vec<Name> {
    permutation
        .iter()
        .map(|&a| names.get(a).cloned().flatten())
        .collect()
}

/// Checks that a result's names name no axis twice (Nx's error for `dot` and `outer`).
pub fn check_unique(op: &'static str, names: &[Name]) -> Result<()> {
    for (i, n) in names.iter().enumerate() {
        if let Some(n) = n {
            if names[..i].iter().any(|m| m.as_ref() == Some(n)) {
                return Err(Error::InvalidArgument {
                    op,
                    message: format!(
                        "operation would result in duplicate names {}, please rename your tensors to avoid duplicates",
                        fmt_names(names)
                    ),
                });
            }
        }
    }
    Ok(())
}

/// The position of the axis called `name`, or Nx's error naming the tensor's names.
pub fn find(op: &'static str, names: &[Name], name: &str) -> Result<usize> {
    names
        .iter()
        .position(|n| n.as_deref() == Some(name))
        .ok_or_else(|| Error::InvalidArgument {
            op,
            message: format!(
                "name :{name} not found in tensor with names {}",
                fmt_names(names)
            ),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(names: &[&str]) -> Vec<Name> {
        names
            .iter()
            .map(|s| (!s.is_empty()).then(|| s.to_string()))
            .collect()
    }

    #[test]
    fn broadcast_aligns_from_the_right_and_refuses_two_names_on_one_axis() {
        let got = broadcast("add", &[&n(&["x", ""]), &n(&["y"])], 2).unwrap();
        assert_eq!(got, n(&["x", "y"]));
        let got = broadcast("add", &[&n(&["", "y"]), &n(&["x", ""])], 2).unwrap();
        assert_eq!(got, n(&["x", "y"]));
        let err = broadcast("add", &[&n(&["x"]), &n(&["y"])], 1).unwrap_err();
        assert!(err
            .to_string()
            .contains("cannot merge name :x on axis 0 with name :y on axis 0"));
    }

    #[test]
    fn shapes_print_their_names_as_nx_does() {
        assert_eq!(
            fmt_named_shape(&[1, 2, 3], &n(&["foo", "", "bat"])),
            "[foo: 1][2][bat: 3]"
        );
        assert_eq!(fmt_names(&n(&["x", ""])), "[:x, nil]");
        assert!(check_unique("dot", &n(&["x", "x"])).is_err());
        assert_eq!(find("sum", &n(&["x", "y"]), "y").unwrap(), 1);
    }
}
