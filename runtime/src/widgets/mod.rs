//! Widgets for cells: controls that the browser changes while a cell runs, and a chart that
//! grows as points are pushed to it.
//!
//! The controls are ipywidgets 8 models on Jupyter comms (target `jupyter.widget`), so
//! JupyterLab draws them with the standard `jupyterlab_widgets`; each shows itself as a cell's
//! last value or through [`crate::display`]. Their state lives in the evaluation process, where
//! the kernel delivers the browser's changes as they happen (see [`crate::contract::display`]):
//! a loop that reads a slider at each step sees it move, and one that asks a button
//! [`Button::clicked`] stops at the next step.
//!
//! ```no_run
//! use tensorbook::widgets::{Button, FloatSlider, LiveChart};
//! # fn main() -> tensorbook::Result<()> {
//! let rate = FloatSlider::new("learning rate", 0.0, 1.0, 0.1)?;
//! let stop = Button::new("Stop");
//! tensorbook::display(&rate);
//! tensorbook::display(&stop);
//! let chart = LiveChart::new("loss", "step", "loss")?;
//! let mut loss = 1.0;
//! for step in 0..10_000 {
//!     if stop.clicked() {
//!         break;
//!     }
//!     loss *= 1.0 - rate.value() / 100.0;
//!     chart.push("train", step as f64, loss)?;
//! }
//! chart.flush()?;
//! # Ok(()) }
//! ```

mod controls;
mod live_chart;
mod model;

pub use controls::{
    Button, Checkbox, Dropdown, FloatSlider, Html, IntSlider, Label, Progress, Text,
};
pub use live_chart::{LiveChart, REDRAW_EVERY};
