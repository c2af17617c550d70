//! The variable store and panic guard that every notebook cell calls, compiled once here.
//!
//! evcxr generates a wrapper around each cell: a store that keeps the session's variables between
//! cells (by name, as `Box<dyn Any>`) and a `catch_unwind` around the user's code. Upstream
//! compiles that wrapper into every cell, which was ~95 ms of rustc's ~159 ms on a trivial cell
//! (monomorphising and generating the store's `HashMap` code again each time). The vendored
//! evcxr (patch 7, `Config::cell_runtime`) instead names this module, which cells already link as
//! part of the runtime's dylib: the cell keeps only the small generic shims below (a `Box::new`,
//! a `downcast`), and everything else runs from here.
//!
//! The markers are evcxr's own line protocol with its parent process (spelled, like every
//! marker, in [`crate::contract::markers`]) and must stay equal to the ones in
//! `vendor/evcxr/src/evcxr_internal_runtime.rs` and `eval_context.rs`; the kernel's
//! state-keeping tests (a panicking cell, a redefined type, `?` errors) exercise each of them.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::panic::{self, AssertUnwindSafe};

pub use crate::contract::markers::{
    EVCXR_ERROR_OCCURRED as USER_ERROR_OCCURRED,
    EVCXR_VARIABLE_CHANGED_TYPE as VARIABLE_CHANGED_TYPE,
};

/// The session's variables, kept in the evaluation process between cells.
#[derive(Default)]
pub struct VariableStore {
    variables: HashMap<String, Box<dyn Any + 'static>>,
}

/// A new, empty store, owned by the evaluation process from then on (evcxr passes the pointer
/// from cell to cell and never frees it).
pub fn create_variable_store() -> *mut VariableStore {
    Box::into_raw(Box::default())
}

impl VariableStore {
    /// Stores `value` under `name`, replacing what was there.
    #[inline]
    pub fn put_variable<T: 'static>(&mut self, name: &str, value: T) {
        self.put_boxed(name, Box::new(value));
    }

    /// Whether the value stored under `name` (if any) is a `T`; says on stdout and stderr when
    /// it is not, because then the variable's type was redefined and its value is lost.
    #[inline]
    pub fn check_variable<T: 'static>(&mut self, name: &str) -> bool {
        self.check_type(name, TypeId::of::<T>())
    }

    /// Takes the value stored under `name` out of the store.
    ///
    /// # Panics
    /// When there is none or it is not a `T`; evcxr calls [`Self::check_variable`] first, so
    /// either means its own bookkeeping is wrong.
    #[inline]
    pub fn take_variable<T: 'static>(&mut self, name: &str) -> T {
        match self.take_boxed(name).downcast::<T>() {
            Ok(value) => *value,
            Err(_) => changed_type(name),
        }
    }

    /// The shared value stored under `name`, created by `create` the first time (evcxr keeps
    /// the tokio runtime of async cells this way).
    ///
    /// # Panics
    /// When `name` holds a value of another type.
    pub fn lazy_arc<T: 'static, F: FnOnce() -> T>(
        &mut self,
        name: &str,
        create: F,
    ) -> std::sync::Arc<T> {
        match self
            .variables
            .entry(name.to_owned())
            .or_insert_with(|| Box::new(std::sync::Arc::new(create())))
            .downcast_mut::<std::sync::Arc<T>>()
        {
            Some(value) => std::sync::Arc::clone(value),
            None => changed_type(name),
        }
    }

    /// The non-generic half of [`Self::put_variable`].
    pub fn put_boxed(&mut self, name: &str, value: Box<dyn Any>) {
        self.variables.insert(name.to_owned(), value);
    }

    /// The non-generic half of [`Self::check_variable`].
    pub fn check_type(&mut self, name: &str, expected: TypeId) -> bool {
        match self.variables.get(name) {
            // `Any::type_id` of the boxed value, not of the box.
            Some(value) if (**value).type_id() != expected => {
                eprintln!("The type of the variable {name} was redefined, so was lost.");
                println!("{VARIABLE_CHANGED_TYPE}{name}");
                false
            }
            _ => true,
        }
    }

    /// The non-generic half of [`Self::take_variable`].
    ///
    /// # Panics
    /// When nothing is stored under `name`.
    pub fn take_boxed(&mut self, name: &str) -> Box<dyn Any> {
        match self.variables.remove(name) {
            Some(value) => value,
            None => panic!("Variable '{name}' has gone missing"),
        }
    }
}

#[cold]
fn changed_type(name: &str) -> ! {
    panic!("Variable {name} changed type")
}

/// Runs a cell's code, catching a panic; returns whether it panicked. The panic message was
/// already printed by the panic hook; the caller tells evcxr (new variables are then lost).
pub fn run_catching(body: Box<dyn FnOnce() + '_>) -> bool {
    panic::catch_unwind(AssertUnwindSafe(body)).is_err()
}

/// The kernel's `:vars`: prints the description of every tensor, compiled function, stream and
/// serving in `store` (the marker line of [`crate::notebook::describe_variables`]) and returns
/// the store as it was. The kernel calls it in the evaluation process by name, from the
/// runtime's dylib that cells already link (vendored evcxr patch 12), so that `:vars` compiles
/// no cell: a cell naming each variable with its type cost ~100 ms of rustc.
///
/// # Safety
/// `store` is null or the pointer [`create_variable_store`] returned, which nothing else uses
/// during the call (evcxr's evaluation process passes it the way it passes it to a cell).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tensorbook_describe_variables(
    store: *mut VariableStore,
) -> *mut VariableStore {
    // SAFETY: the caller's promise above.
    let variables = unsafe { store.as_ref() };
    let described = panic::catch_unwind(AssertUnwindSafe(|| {
        let mut list: Vec<(&str, &dyn crate::notebook::Describe)> = variables
            .into_iter()
            .flat_map(|store| store.variables.iter())
            .filter_map(|(name, value)| describable(value.as_ref()).map(|d| (name.as_str(), d)))
            .collect();
        list.sort_by_key(|(name, _)| *name);
        crate::notebook::describe_variables(&list);
    }));
    if described.is_err() {
        eprintln!("[tensorbook] :vars could not describe the variables");
    }
    store
}

/// Answers the session command the kernel wrote to its request file (`:client`, `:clients`;
/// see `contract::session_command`), in this process, where the session's state is. The
/// kernel calls it by name, as it calls [`tensorbook_describe_variables`]; the store is
/// passed through untouched.
///
/// # Safety
/// As for [`tensorbook_describe_variables`]: `store` is passed back as it came.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn tensorbook_session_command(
    store: *mut VariableStore,
) -> *mut VariableStore {
    let answered = panic::catch_unwind(|| {
        let command = crate::contract::session_command::read_request().unwrap_or_default();
        crate::notebook::answer_session_command(&command);
    });
    if answered.is_err() {
        eprintln!("[tensorbook] the session command failed");
    }
    store
}

/// The value as something `:vars` describes, for each type it describes.
fn describable(value: &dyn Any) -> Option<&dyn crate::notebook::Describe> {
    use crate::jit::stream::Stream;
    use crate::jit::Jit;
    use crate::parallel::data_parallel::DataParallel;
    use crate::tensor::Tensor;
    if let Some(v) = value.downcast_ref::<Tensor>() {
        return Some(v);
    }
    if let Some(v) = value.downcast_ref::<Jit<Tensor>>() {
        return Some(v);
    }
    if let Some(v) = value.downcast_ref::<Jit<(Tensor, Tensor)>>() {
        return Some(v);
    }
    if let Some(v) = value.downcast_ref::<Jit<Vec<Tensor>>>() {
        return Some(v);
    }
    if let Some(v) = value.downcast_ref::<Stream>() {
        return Some(v);
    }
    if let Some(v) = value.downcast_ref::<DataParallel<Vec<Tensor>>>() {
        return Some(v);
    }
    if let Some(v) = value.downcast_ref::<DataParallel<Tensor>>() {
        return Some(v);
    }
    if let Some(v) = value.downcast_ref::<DataParallel<(Tensor, Vec<Tensor>)>>() {
        return Some(v);
    }
    value
        .downcast_ref::<crate::serving::Serving>()
        .map(|v| v as &dyn crate::notebook::Describe)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_describes_its_tensors_and_nothing_else() {
        let mut store = VariableStore::default();
        store.put_variable("n", 3i32);
        let tensor = crate::tensor::Tensor::iota(crate::dtype::DType::F32, &[2], None).unwrap();
        store.put_variable("t", tensor);
        let described: Vec<&str> = store
            .variables
            .iter()
            .filter(|(_, v)| describable(v.as_ref()).is_some())
            .map(|(name, _)| name.as_str())
            .collect();
        assert_eq!(described, ["t"]);
        let raw = Box::into_raw(Box::new(store));
        // SAFETY: `raw` is a store that nothing else uses; null is allowed.
        unsafe {
            assert_eq!(tensorbook_describe_variables(raw), raw);
            assert!(tensorbook_describe_variables(std::ptr::null_mut()).is_null());
            // `raw` came from `Box::into_raw` above and is not used after this.
            drop(Box::from_raw(raw));
        }
    }

    #[test]
    fn values_come_back_as_stored() {
        let mut store = VariableStore::default();
        store.put_variable("v", vec![1.5f32, 2.5]);
        assert!(store.check_variable::<Vec<f32>>("v"));
        assert_eq!(store.take_variable::<Vec<f32>>("v"), vec![1.5, 2.5]);
    }

    #[test]
    fn a_redefined_type_is_reported_not_taken() {
        let mut store = VariableStore::default();
        store.put_variable("x", 1i32);
        assert!(!store.check_variable::<i64>("x"));
        assert!(store.check_variable::<i32>("x"));
        assert!(store.check_variable::<String>("absent"));
    }

    #[test]
    fn a_panicking_body_is_caught_and_reported() {
        let mut ran = false;
        assert!(!run_catching(Box::new(|| ran = true)));
        assert!(ran);
        let hook = panic::take_hook();
        panic::set_hook(Box::new(|_| {}));
        let panicked = run_catching(Box::new(|| panic!("in a cell")));
        panic::set_hook(hook);
        assert!(panicked);
    }

    #[test]
    fn lazy_arc_creates_once() {
        let mut store = VariableStore::default();
        let a = store.lazy_arc("rt", || 7u8);
        let b = store.lazy_arc("rt", || 9u8);
        assert_eq!((*a, *b), (7, 7));
    }
}
